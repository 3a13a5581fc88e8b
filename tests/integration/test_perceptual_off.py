"""Perceptual memory used while it is off (no multimodal extra, or perceptual.enabled
false): the README's image example fails with the typed error naming the extra and
the setting (issue 20), not with AttributeError on None."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import ConfigError, PerceptualNotConfiguredError
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow


def test_readme_image_example_raises_the_typed_error(tmp_path: Path) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path / "data")
    with MemoryManager.open(settings) as mm:  # settings without perceptual.enabled
        assert mm.has_perceptual is False
        with pytest.raises(PerceptualNotConfiguredError) as err:
            mm.perceptual.add("u", modality="image", source="photos/logo.png",
                              caption="our logo")
        assert isinstance(err.value, ConfigError)  # a 501 problem over REST
        message = str(err.value)
        assert "perceptual.enabled" in message
        assert "multimodal" in message or "perceptual.image.pretrained" in message
        with pytest.raises(PerceptualNotConfiguredError):
            mm.perceptual.retrieve("u", "a red logo", target_modality="image")
        # the rest of the manager does not depend on it
        assert mm.search("a red logo", namespace="u") == []
        assert mm.clear("u", confirm=True)["records"] == 0


def test_enabled_without_the_extra_names_the_extra(tmp_path: Path) -> None:
    # perceptual.enabled: true in the main venv (no open_clip / laion_clap): adding an
    # image names what to install, not a weights setting the user cannot fill yet
    settings = load_settings(environ={}, data_dir=tmp_path / "data",
                             perceptual={"enabled": True})
    with MemoryManager.open(settings) as mm:
        with pytest.raises(PerceptualNotConfiguredError) as err:
            mm.perceptual.add("u", modality="image", source="photos/logo.png")
        assert "hello-memory[multimodal]" in str(err.value)
        assert "open_clip" in str(err.value)
