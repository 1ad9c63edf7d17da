import { randomBytes } from 'node:crypto'
import { type Expression, type ExpressionBuilder, type Generated, type Kysely, type Migrator, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { Post, PostInput, PostSortKey, PostStatus } from '../domain/post.ts'
import { isAdmin, type Viewer } from '../domain/principal.ts'
import type { ApiKeyRecord, ApiKeyStore, ListPage, ListQuery, PostFilter, PostStore, SortTerm, Store, WriteResult } from './store.ts'

/** Timestamps are text (ISO 8601) in SQLite and timestamptz in PostgreSQL; both read back as ISO strings. */
type Timestamp = string | Date

export interface PostsTable {
  id: Generated<number>
  title: string
  content: string
  status: PostStatus
  author: string
  created_at: Timestamp
  updated_at: Timestamp
  revision: number
}

export interface ApiKeysTable {
  id: string
  name: string
  scopes: string
  hash: string
  created_at: Timestamp
  revoked_at: Timestamp | null
}

export interface MetaTable {
  key: string
  value: string
}

export interface Database {
  posts: PostsTable
  api_keys: ApiKeysTable
  meta: MetaTable
}

/** What differs between the databases, supplied by each adapter folder. */
export interface DialectParts {
  readonly kind: 'sqlite' | 'postgres'
  /** A condition true for posts whose title or content match every word of `q`. */
  textSearch (eb: ExpressionBuilder<Database, 'posts'>, q: string): Expression<SqlBool>
  /** The value to bind for a timestamp column. */
  timestamp (d: Date): Timestamp
  /** Kysely's migrator takes a database lock, so instances starting together migrate once. */
  migrator (db: Kysely<Database>): Migrator
}

const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

function iso (v: Timestamp): string {
  // SQLite hands back what the store wrote (already this form); parsing it again per row showed in profiles.
  if (typeof v === 'string') return ISO_UTC_MS.test(v) ? v : new Date(v).toISOString()
  return v.toISOString()
}

type PostRow = { id: number | string, title: string, content: string, status: PostStatus, author: string, created_at: Timestamp, updated_at: Timestamp, revision: number | string }

function toPost (row: PostRow): Post {
  return {
    id: Number(row.id),
    title: row.title,
    content: row.content,
    status: row.status,
    author: row.author,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    revision: Number(row.revision),
  }
}

const SORT_COLUMNS = { id: 'id', title: 'title', created_at: 'created_at', updated_at: 'updated_at' } as const

function flip (d: 'asc' | 'desc'): 'asc' | 'desc' {
  return d === 'asc' ? 'desc' : 'asc'
}

/**
 * Keyset condition "strictly after `values` in `sort` order". When every term runs the same
 * way it is one row-value comparison, which both databases answer with an index range scan.
 */
function keysetCondition<DB, TB extends keyof DB> (
  eb: ExpressionBuilder<DB, TB>,
  sort: readonly SortTerm[],
  values: readonly unknown[],
  column: (key: string) => string
): Expression<SqlBool> {
  const sameWay = sort.every(t => t.direction === sort[0]!.direction)
  if (sameWay) {
    const op = sort[0]!.direction === 'asc' ? '>' : '<'
    const cols = sql.join(sort.map(t => sql.ref(column(t.key))))
    const vals = sql.join(values.map(v => sql.val(v)))
    return sql<SqlBool>`(${cols}) ${sql.raw(op)} (${vals})`
  }
  const ors: Expression<SqlBool>[] = sort.map((term, i) => {
    const ands = sort.slice(0, i).map((t, j) => sql<SqlBool>`${sql.ref(column(t.key))} = ${values[j]}`)
    ands.push(sql<SqlBool>`${sql.ref(column(term.key))} ${sql.raw(term.direction === 'asc' ? '>' : '<')} ${values[i]}`)
    return eb.and(ands)
  })
  return eb.or(ors)
}

/**
 * Reads one page of any list: offset or keyset paging over `sort`, which must end with a unique key.
 * Shared by every collection so that paging behaves the same everywhere.
 */
export async function readPage<DB, TB extends keyof DB & string, O> (
  base: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery<string, unknown>,
  column: (key: string) => string,
  countQuery: () => Promise<number>
): Promise<ListPage<O>> {
  const backwards = query.before !== undefined
  const order = backwards ? query.sort.map(t => ({ key: t.key, direction: flip(t.direction) })) : query.sort
  const position = query.after ?? query.before
  let q = base
  if (position !== undefined) {
    q = q.where(eb => keysetCondition(eb as ExpressionBuilder<DB, TB>, order, position, column))
  }
  for (const term of order) q = q.orderBy(sql.ref(column(term.key)), term.direction)
  q = q.limit(query.limit + 1)
  if (query.offset) q = q.offset(query.offset)
  const [rows, total] = await Promise.all([q.execute(), query.count ? countQuery() : Promise.resolve(undefined)])
  const more = rows.length > query.limit
  const items = more ? rows.slice(0, query.limit) : rows
  if (backwards) items.reverse()
  return total === undefined ? { items, more } : { items, more, total }
}

class KyselyPostStore implements PostStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private visible (eb: ExpressionBuilder<Database, 'posts'>, viewer: Viewer): Expression<SqlBool> | null {
    if (isAdmin(viewer)) return null
    if (viewer === null) return eb('posts.status', '=', 'published')
    return eb.or([eb('posts.status', '=', 'published'), eb('posts.author', '=', viewer.subject)])
  }

  private filtered (filter: PostFilter, viewer: Viewer) {
    return this.db.selectFrom('posts').where(eb => {
      const conds: Expression<SqlBool>[] = []
      const vis = this.visible(eb, viewer)
      if (vis) conds.push(vis)
      if (filter.status !== undefined) conds.push(eb('posts.status', '=', filter.status))
      if (filter.q !== undefined) conds.push(this.dialect.textSearch(eb, filter.q))
      return eb.and(conds)
    })
  }

  async findById (id: number, viewer: Viewer): Promise<Post | null> {
    const row = await this.db.selectFrom('posts').selectAll()
      .where('id', '=', id)
      .where(eb => this.visible(eb, viewer) ?? eb.lit(true))
      .executeTakeFirst()
    return row ? toPost(row) : null
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    const page = await readPage(
      this.filtered(query.filter, viewer).selectAll(),
      query,
      key => `posts.${SORT_COLUMNS[key as PostSortKey]}`,
      async () => {
        const r = await this.filtered(query.filter, viewer).select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()
        return Number(r.n)
      }
    )
    return { ...page, items: page.items.map(toPost) }
  }

  /**
   * Runs a write so that it commits only if its request is still wanted: in a transaction that
   * is rolled back when `abandoned` fired while the statement ran (for instance while it waited
   * for a lock).
   */
  private async unlessAbandoned<T> (abandoned: AbortSignal | undefined, write: (db: Kysely<Database>) => Promise<T>): Promise<T> {
    if (abandoned === undefined) return await write(this.db)
    abandoned.throwIfAborted()
    return await this.db.transaction().execute(async trx => {
      const result = await write(trx)
      abandoned.throwIfAborted()
      return result
    })
  }

  async create (input: PostInput, author: string, now: Date, abandoned?: AbortSignal): Promise<Post> {
    const ts = this.dialect.timestamp(now)
    const row = await this.unlessAbandoned(abandoned, db => db.insertInto('posts')
      .values({ title: input.title, content: input.content, status: input.status, author, created_at: ts, updated_at: ts, revision: 1 })
      .returningAll()
      .executeTakeFirstOrThrow())
    return toPost(row)
  }

  async replace (id: number, input: PostInput, expectedRevision: number, now: Date, abandoned?: AbortSignal): Promise<WriteResult<Post>> {
    const row = await this.unlessAbandoned(abandoned, db => db.updateTable('posts')
      .set(eb => ({
        title: input.title,
        content: input.content,
        status: input.status,
        updated_at: this.dialect.timestamp(now),
        revision: eb('revision', '+', 1),
      }))
      .where('id', '=', id)
      .where('revision', '=', expectedRevision)
      .returningAll()
      .executeTakeFirst())
    if (row) return { outcome: 'done', value: toPost(row) }
    return await this.missingOrStale(id)
  }

  async delete (id: number, expectedRevision: number, abandoned?: AbortSignal): Promise<WriteResult<true>> {
    const r = await this.unlessAbandoned(abandoned, db => db.deleteFrom('posts').where('id', '=', id).where('revision', '=', expectedRevision).executeTakeFirst())
    if (Number(r.numDeletedRows) === 1) return { outcome: 'done', value: true }
    return await this.missingOrStale(id)
  }

  private async missingOrStale (id: number): Promise<{ outcome: 'missing' } | { outcome: 'stale' }> {
    const exists = await this.db.selectFrom('posts').select('id').where('id', '=', id).executeTakeFirst()
    return exists ? { outcome: 'stale' } : { outcome: 'missing' }
  }
}

function toApiKey (row: { id: string, name: string, scopes: string, hash: string, created_at: Timestamp, revoked_at: Timestamp | null }): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(' ').filter(Boolean),
    hash: row.hash,
    createdAt: iso(row.created_at),
    revokedAt: row.revoked_at === null ? null : iso(row.revoked_at),
  }
}

class KyselyApiKeyStore implements ApiKeyStore {
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

/** The Store both adapters share; each adapter supplies only its DialectParts. */
export class KyselyStore implements Store {
  readonly kind: 'sqlite' | 'postgres'
  readonly posts: PostStore
  readonly apiKeys: ApiKeyStore
  private secret: Buffer | null = null

  constructor (readonly db: Kysely<Database>, readonly dialect: DialectParts) {
    this.kind = dialect.kind
    this.posts = new KyselyPostStore(db, dialect)
    this.apiKeys = new KyselyApiKeyStore(db, dialect)
  }

  async serverSecret (): Promise<Buffer> {
    if (this.secret) return this.secret
    // Insert-if-absent, then read: every instance ends up with the first value written.
    await this.db.insertInto('meta')
      .values({ key: 'server_secret', value: randomBytes(32).toString('base64') })
      .onConflict(oc => oc.column('key').doNothing())
      .execute()
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', 'server_secret').executeTakeFirstOrThrow()
    this.secret = Buffer.from(row.value, 'base64')
    return this.secret
  }

  async migrate (): Promise<void> {
    const { error, results } = await this.dialect.migrator(this.db).migrateToLatest()
    const failed = results?.find(r => r.status === 'Error')
    if (error) throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String((error as Error).message ?? error)}`)
  }

  async ping (): Promise<void> {
    await sql`select 1`.execute(this.db)
  }

  async close (): Promise<void> {
    await this.db.destroy()
  }
}
