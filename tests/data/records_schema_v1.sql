-- Frozen DDL of record store schema version 1 (before content_hash), SQLite.
-- Used by tests/unit/test_record_store.py to prove the v1 -> v2 upgrade keeps data.
CREATE TABLE hm_audit_log (
	id INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	action VARCHAR(64) NOT NULL, 
	details JSON NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_audit_ns_at ON hm_audit_log (namespace, at);
CREATE TABLE hm_documents (
	id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	source_path TEXT NOT NULL, 
	title TEXT, 
	content_hash VARCHAR(64) NOT NULL, 
	modified_time DATETIME, 
	language VARCHAR(16), 
	ingested_at DATETIME NOT NULL, 
	metadata JSON NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_documents_source UNIQUE (namespace, source_path)
);
CREATE TABLE hm_entities (
	id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	name TEXT NOT NULL, 
	normalized_name TEXT NOT NULL, 
	type VARCHAR(64) NOT NULL, 
	properties JSON NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_entities_ns_norm ON hm_entities (namespace, normalized_name);
CREATE TABLE hm_memory_items (
	id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	user_id VARCHAR(255), 
	agent_id VARCHAR(255), 
	session_id VARCHAR(255), 
	memory_type VARCHAR(16) NOT NULL, 
	modality VARCHAR(16) NOT NULL, 
	content TEXT NOT NULL, 
	event_time DATETIME NOT NULL, 
	recorded_time DATETIME NOT NULL, 
	importance FLOAT NOT NULL, 
	access_count INTEGER NOT NULL, 
	last_access DATETIME, 
	status VARCHAR(16) NOT NULL, 
	metadata JSON NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT ck_importance_range CHECK (importance >= 0 AND importance <= 1)
);
CREATE INDEX ix_items_ns_type_status ON hm_memory_items (namespace, memory_type, status);
CREATE INDEX ix_items_ns_user ON hm_memory_items (namespace, user_id);
CREATE INDEX ix_items_ns_session ON hm_memory_items (namespace, session_id);
CREATE INDEX ix_items_ns_event_time ON hm_memory_items (namespace, event_time);
CREATE TABLE hm_outbox (
	seq INTEGER NOT NULL, 
	op VARCHAR(32) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	memory_id VARCHAR(36) NOT NULL, 
	created_at DATETIME NOT NULL, 
	applied_at DATETIME, 
	PRIMARY KEY (seq)
);
CREATE INDEX ix_outbox_pending ON hm_outbox (applied_at, seq);
CREATE TABLE hm_schema_meta (
	"key" VARCHAR(64) NOT NULL, 
	value VARCHAR(256) NOT NULL, 
	PRIMARY KEY ("key")
);
CREATE TABLE hm_chunks (
	id VARCHAR(36) NOT NULL, 
	document_id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	ordinal INTEGER NOT NULL, 
	content TEXT NOT NULL, 
	content_hash VARCHAR(64) NOT NULL, 
	heading_path TEXT NOT NULL, 
	start_offset INTEGER NOT NULL, 
	end_offset INTEGER NOT NULL, 
	token_count INTEGER NOT NULL, 
	language VARCHAR(16), 
	metadata JSON NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(document_id) REFERENCES hm_documents (id) ON DELETE CASCADE
);
CREATE INDEX ix_chunks_ns ON hm_chunks (namespace);
CREATE INDEX ix_chunks_document ON hm_chunks (document_id, ordinal);
CREATE TABLE hm_entity_mentions (
	entity_id VARCHAR(36) NOT NULL, 
	memory_id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	PRIMARY KEY (entity_id, memory_id), 
	FOREIGN KEY(entity_id) REFERENCES hm_entities (id) ON DELETE CASCADE
);
CREATE INDEX ix_entity_mentions_memory ON hm_entity_mentions (namespace, memory_id);
CREATE TABLE hm_relations (
	id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	source_id VARCHAR(36) NOT NULL, 
	target_id VARCHAR(36) NOT NULL, 
	type VARCHAR(128) NOT NULL, 
	weight FLOAT NOT NULL, 
	properties JSON NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(source_id) REFERENCES hm_entities (id) ON DELETE CASCADE, 
	FOREIGN KEY(target_id) REFERENCES hm_entities (id) ON DELETE CASCADE
);
CREATE INDEX ix_relations_target ON hm_relations (target_id);
CREATE INDEX ix_relations_ns ON hm_relations (namespace);
CREATE INDEX ix_relations_source ON hm_relations (source_id);
CREATE TABLE hm_relation_mentions (
	relation_id VARCHAR(36) NOT NULL, 
	memory_id VARCHAR(36) NOT NULL, 
	namespace VARCHAR(255) NOT NULL, 
	PRIMARY KEY (relation_id, memory_id), 
	FOREIGN KEY(relation_id) REFERENCES hm_relations (id) ON DELETE CASCADE
);
CREATE INDEX ix_relation_mentions_memory ON hm_relation_mentions (namespace, memory_id);
INSERT INTO hm_schema_meta (key, value) VALUES ('schema_version', '1');
