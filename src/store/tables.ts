import type { Expression, ExpressionBuilder, Generated, Kysely, Migrator, SqlBool } from 'kysely'
import type { OrderStatus } from '../domain/order.ts'
import type { PostStatus } from '../domain/post.ts'

/** Timestamps are text (ISO 8601) in SQLite and timestamptz in PostgreSQL; both read back as ISO strings. */
export type Timestamp = string | Date

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

export interface IdempotencyKeysTable {
  principal: string
  method: string
  path: string
  key: string
  fingerprint: string
  /** Who holds an unfinished record; a new claimant changes it, so a late owner cannot complete it. */
  token: string
  state: 'running' | 'done'
  locked_until: Timestamp
  status: number | null
  headers: string | null
  body: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

export interface OrdersTable {
  id: Generated<number>
  owner: string
  customer_email: string
  status: OrderStatus
  created_at: Timestamp
  updated_at: Timestamp
  revision: number
}

export interface OrderItemsTable {
  order_id: number
  position: number
  sku: string
  quantity: number
}

export interface Database {
  posts: PostsTable
  orders: OrdersTable
  order_items: OrderItemsTable
  api_keys: ApiKeysTable
  meta: MetaTable
  idempotency_keys: IdempotencyKeysTable
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
  /**
   * The statement that opens a unit of work. SQLite: `BEGIN IMMEDIATE`, which takes the write lock
   * at once (a deferred transaction upgrading later could fail with SQLITE_BUSY instead of waiting).
   * PostgreSQL: READ COMMITTED; writes are compare-and-set on a revision, so they need no more.
   */
  readonly begin: string
}

const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export function iso (v: Timestamp): string {
  // SQLite hands back what the store wrote (already this form); parsing it again per row showed in profiles.
  if (typeof v === 'string') return ISO_UTC_MS.test(v) ? v : new Date(v).toISOString()
  return v.toISOString()
}
