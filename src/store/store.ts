import type { Post, PostInput, PostSortKey, PostStatus } from '../domain/post.ts'
import type { Viewer } from '../domain/principal.ts'

export type SortDirection = 'asc' | 'desc'

export interface SortTerm<K extends string = string> {
  readonly key: K
  readonly direction: SortDirection
}

/**
 * One page of a list. `sort` always ends with `id`, so the order is total and stable.
 * Exactly one of `offset` (page paging) or `after`/`before` (keyset paging, the sort-key values
 * of the row next to the page) may be set; none means the first page.
 */
export interface ListQuery<K extends string, F> {
  readonly filter: F
  readonly sort: readonly SortTerm<K>[]
  readonly limit: number
  readonly offset?: number
  readonly after?: readonly (string | number)[]
  readonly before?: readonly (string | number)[]
  /** Also count every matching row (costs a second query). */
  readonly count?: boolean
}

export interface ListPage<T> {
  /** In the requested sort order, whatever the paging direction. */
  readonly items: T[]
  /** Whether more rows exist beyond the page in the direction it was read. */
  readonly more: boolean
  readonly total?: number
}

export interface PostFilter {
  readonly status?: PostStatus
  /** Full-text search over title and content; every word must match. */
  readonly q?: string
}

/** What a conditional write saw: done, the row is gone, or it changed meanwhile. */
export type WriteResult<T> =
  | { readonly outcome: 'done', readonly value: T }
  | { readonly outcome: 'missing' }
  | { readonly outcome: 'stale' }

export interface PostStore {
  /** The post if it exists and `viewer` may see it (published, own, or admin). */
  findById (id: number, viewer: Viewer): Promise<Post | null>
  /** Posts `viewer` may see; visibility is part of the query, so pages stay full. */
  list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>>
  /**
   * Writes take an optional `abandoned` signal: a write whose request was abandoned (timed out,
   * client gone) before it commits is rolled back, so an answered 503 never hides a change.
   */
  create (input: PostInput, author: string, now: Date, abandoned?: AbortSignal): Promise<Post>
  /**
   * Replaces the client-set fields when the row is still at `expectedRevision`:
   * the check and the write are one statement, so of two racing writers one gets `stale`.
   */
  replace (id: number, input: PostInput, expectedRevision: number, now: Date, abandoned?: AbortSignal): Promise<WriteResult<Post>>
  delete (id: number, expectedRevision: number, abandoned?: AbortSignal): Promise<WriteResult<true>>
}

export interface ApiKeyRecord {
  readonly id: string
  readonly name: string
  readonly scopes: readonly string[]
  readonly hash: string
  readonly createdAt: string
  readonly revokedAt: string | null
}

export interface ApiKeyStore {
  create (record: { id: string, name: string, scopes: readonly string[], hash: string }, now: Date): Promise<ApiKeyRecord>
  findById (id: string): Promise<ApiKeyRecord | null>
  list (): Promise<ApiKeyRecord[]>
  /** Revokes the live key with this name or id; false when there is none. */
  revoke (nameOrId: string, now: Date): Promise<boolean>
  countActive (): Promise<number>
}

/**
 * The service's persistence: one interface, one adapter per database.
 *
 * @example
 * const store = await openStore(config)   // SQLite file or PostgreSQL, by DATABASE_URL
 * await store.migrate()
 * const post = await store.posts.create({ title: 'Hi', content: '', status: 'published' }, 'alice', new Date())
 * await store.close()
 */
export interface Store {
  readonly kind: 'sqlite' | 'postgres'
  readonly posts: PostStore
  readonly apiKeys: ApiKeyStore
  /** A random secret made once per database and shared by every instance (signs cursors). */
  serverSecret (): Promise<Buffer>
  /** Applies every migration not yet applied; safe to run from several instances at once. */
  migrate (): Promise<void>
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
