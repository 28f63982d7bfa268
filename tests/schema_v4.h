/*
 * schema_v4.h - SQL that turns a database of this version back into what
 * schema version 4 wrote (no op labels: op_defs without the label columns,
 * the ops view without them), for the tests of reading and migrating
 * older files. Header-only, like tmpdir.h.
 */
#ifndef TESTS_SCHEMA_V4_H
#define TESTS_SCHEMA_V4_H

#define SCHEMA_V4_DOWNGRADE                                                               \
	"DROP VIEW ops; ALTER TABLE op_defs DROP COLUMN layer; "                           \
	"ALTER TABLE op_defs DROP COLUMN mb; ALTER TABLE op_defs DROP COLUMN chunk; "      \
	"ALTER TABLE op_defs DROP COLUMN phase; ALTER TABLE op_defs DROP COLUMN kernel; "  \
	"CREATE VIEW ops (run_id, rank, stream, kind, name, start_ps, end_ps, bytes, flops, " \
	"id) AS SELECT b.run_id, b.rank, t.stream, d.kind, d.name, t.start_ps, t.end_ps, " \
	"d.bytes, d.flops, t.rowid FROM timeline_blocks b CROSS JOIN timeline t ON "       \
	"t.rowid BETWEEN b.first_row AND b.last_row CROSS JOIN op_defs d ON "              \
	"d.run_id = b.run_id AND d.op = t.op; PRAGMA user_version = 4"

#endif
