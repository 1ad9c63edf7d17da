import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    const statements = [
      `CREATE TABLE users (
        id TEXT PRIMARY KEY, email TEXT UNIQUE, name TEXT NOT NULL, slug TEXT NOT NULL UNIQUE,
        bio TEXT NOT NULL DEFAULT '', website TEXT, avatar TEXT,
        role TEXT NOT NULL CHECK (role IN ('contributor', 'author', 'editor', 'admin', 'owner')),
        status TEXT NOT NULL CHECK (status IN ('active', 'suspended', 'inactive')),
        password_hash TEXT, totp_secret TEXT, totp_pending TEXT, totp_last_step ${t.ref} NOT NULL DEFAULT 0,
        generation INTEGER NOT NULL DEFAULT 1,
        created_at ${t.timestamp} NOT NULL, updated_at ${t.timestamp} NOT NULL, last_seen_at ${t.timestamp},
        revision INTEGER NOT NULL DEFAULT 1)`,
      'CREATE INDEX users_name_idx ON users (name, id)',
      'CREATE TABLE user_slug_aliases (slug TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE)',
      `CREATE TABLE recovery_codes (
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, hash TEXT NOT NULL, used_at ${t.timestamp},
        PRIMARY KEY (user_id, hash))`,
      `CREATE TABLE sessions (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        method TEXT NOT NULL, user_agent TEXT NOT NULL DEFAULT '',
        created_at ${t.timestamp} NOT NULL, last_used_at ${t.timestamp} NOT NULL, expires_at ${t.timestamp} NOT NULL,
        ended_at ${t.timestamp})`,
      'CREATE INDEX sessions_user_idx ON sessions (user_id)',
      `CREATE TABLE refresh_tokens (
        hash TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        created_at ${t.timestamp} NOT NULL, spent_at ${t.timestamp})`,
      'CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id)',
      `CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY, private_jwk TEXT NOT NULL, public_jwk TEXT NOT NULL,
        created_at ${t.timestamp} NOT NULL, retired_at ${t.timestamp})`,
      `CREATE TABLE identity_revocations (
        id ${t.id}, kind TEXT NOT NULL CHECK (kind IN ('session', 'user')), subject TEXT NOT NULL,
        generation INTEGER NOT NULL, expires_at ${t.timestamp} NOT NULL)`,
      `CREATE TABLE sign_in_failures (
        key TEXT PRIMARY KEY, failures INTEGER NOT NULL, window_start ${t.timestamp} NOT NULL, blocked_until ${t.timestamp})`,
      `CREATE TABLE webauthn_challenges (
        challenge TEXT PRIMARY KEY, user_id TEXT, purpose TEXT NOT NULL,
        expires_at ${t.timestamp} NOT NULL, used_at ${t.timestamp})`,
      `CREATE TABLE passkeys (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, name TEXT NOT NULL,
        public_key TEXT NOT NULL, counter ${t.ref} NOT NULL, transports TEXT NOT NULL DEFAULT '',
        created_at ${t.timestamp} NOT NULL, last_used_at ${t.timestamp})`,
      'CREATE INDEX passkeys_user_idx ON passkeys (user_id)',
      `CREATE TABLE invitations (
        id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, email TEXT NOT NULL, role TEXT NOT NULL, name TEXT,
        invited_by TEXT NOT NULL, created_at ${t.timestamp} NOT NULL, expires_at ${t.timestamp} NOT NULL,
        accepted_at ${t.timestamp}, revoked_at ${t.timestamp})`,
      `CREATE TABLE password_resets (
        token_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at ${t.timestamp} NOT NULL, expires_at ${t.timestamp} NOT NULL, used_at ${t.timestamp})`,
      'ALTER TABLE api_keys ADD COLUMN user_id TEXT',
    ]
    for (const s of statements) await sql.raw(s).execute(db)
  },
  down: forwardOnly,
})
