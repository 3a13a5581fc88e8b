"""BM25 sparse encoding: stable indices, term-frequency saturation, query form."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hello_memory.text.bm25 import LexicalEncoder, term_index


def test_term_index_is_stable_across_processes() -> None:
    here = [term_index(t) for t in ("berlin", "蓝牙", "984233")]
    code = ("from hello_memory.text.bm25 import term_index;"
            "print([term_index(t) for t in ('berlin', '蓝牙', '984233')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(here)
    assert all(0 <= i < 2**31 for i in here)


def test_document_weights_follow_bm25_tf_saturation() -> None:
    enc = LexicalEncoder(k1=1.2, b=0.75, avgdl=4.0)
    vec = enc.document("berlin berlin paris")  # 3 terms, tf(berlin)=2, tf(paris)=1
    assert vec is not None
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 4.0)
    weights = dict(zip(vec.indices, vec.values, strict=True))
    # terms are stemmed (Snowball): "paris" is indexed as "pari", "berlin" stays
    assert weights[term_index("berlin")] == pytest.approx(2 * 2.2 / (2 + norm))
    assert weights[term_index("pari")] == pytest.approx(1 * 2.2 / (1 + norm))
    assert list(vec.indices) == sorted(vec.indices)


def test_english_terms_are_stemmed_and_possessives_folded() -> None:
    enc = LexicalEncoder()
    assert enc.terms("Tom plays the cello") == enc.terms("Tom's playing cellos")
    assert enc.terms("lactose intolerant") == enc.terms("lactose intolerance")
    assert enc.terms("蓝牙耳机 984233") == LexicalEncoder(stem=False).terms("蓝牙耳机 984233")
    assert LexicalEncoder(stem=False).terms("plays") == ["plays"]


def test_query_is_binary_and_empty_text_has_no_vector() -> None:
    enc = LexicalEncoder()
    q = enc.query("Berlin berlin 蓝牙耳机")
    assert q is not None and set(q.values) == {1.0}
    assert len(q.indices) == len(set(q.indices))
    assert enc.document("!!! ...") is None and enc.query("   ") is None
    # a stopword-only text still indexes its words rather than nothing
    assert enc.document("the and of") is not None
