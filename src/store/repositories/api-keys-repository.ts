import type { Kysely } from 'kysely'
import type { ApiKeyRecord, ApiKeyStore } from '../store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../tables.ts'

function toApiKey (row: { id: string, name: string, scopes: string, hash: string, created_at: Timestamp, revoked_at: Timestamp | null, user_id?: string | null }): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(' ').filter(Boolean),
    hash: row.hash,
    createdAt: iso(row.created_at),
    revokedAt: row.revoked_at === null ? null : iso(row.revoked_at),
    userId: row.user_id ?? null,
  }
}

/** The api_keys table: only hashes are kept. */
export class ApiKeysRepository implements ApiKeyStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async create (record: { id: string, name: string, scopes: readonly string[], hash: string }, now: Date): Promise<ApiKeyRecord> {
    const row = await this.db.insertInto('api_keys')
      .values({ id: record.id, name: record.name, scopes: record.scopes.join(' '), hash: record.hash, created_at: this.dialect.timestamp(now), revoked_at: null })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toApiKey(row)
  }

  async findById (id: string): Promise<ApiKeyRecord | null> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
    return row ? toApiKey(row) : null
  }

  async list (): Promise<ApiKeyRecord[]> {
    const rows = await this.db.selectFrom('api_keys').selectAll().orderBy('created_at').orderBy('id').execute()
    return rows.map(toApiKey)
  }

  async revoke (nameOrId: string, now: Date): Promise<boolean> {
    const r = await this.db.updateTable('api_keys')
      .set({ revoked_at: this.dialect.timestamp(now) })
      .where(eb => eb.or([eb('name', '=', nameOrId), eb('id', '=', nameOrId)]))
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async countActive (): Promise<number> {
    const r = await this.db.selectFrom('api_keys').select(eb => eb.fn.countAll<number | string>().as('n')).where('revoked_at', 'is', null).executeTakeFirstOrThrow()
    return Number(r.n)
  }
}
