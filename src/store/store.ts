import type { StoreCircuit } from './circuit.ts'
import type { ExportJob, ExportLease, ExportRequest } from '../domain/export.ts'
import type { Post, PostSortKey, PostStatus, PostSummary, PostWriteInput } from '../domain/post.ts'
import type { Viewer } from '../domain/principal.ts'
import type { Revision, RevisionSummary } from '../domain/revision.ts'

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
  /** Full-text search over title, content and tags; every word must match. */
  readonly q?: string
  /** Posts holding any of these tag keys (case-folded). */
  readonly tag?: readonly string[]
  readonly author?: string
  /** The current slug (not an alias). */
  readonly slug?: string
  /** RFC 3339 bounds, exclusive, on `published_at`. */
  readonly published_after?: string
  readonly published_before?: string
  /** RFC 3339, inclusive, on `updated_at`. */
  readonly updated_since?: string
}

/** What a slug names: a post (its current slug), the current slug of the post it is an alias of, or nothing visible. */
export type SlugLookup = { readonly post: Post } | { readonly movedTo: string } | null

/** A tag with the number of posts holding it; `id` is its case-folded key (the list's tie-breaker). */
export interface TagCount {
  readonly id: string
  readonly name: string
  readonly count: number
}

export interface TagsQuery {
  /** A case-insensitive prefix of the name. */
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
  /** The same page without the posts' content, for lists that do not show it (it is most of a row). */
  listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>>
  /** The post whose current slug or alias `slug` is, if `viewer` may see it. */
  findBySlug (slug: string, viewer: Viewer): Promise<SlugLookup>
  /** Throws SlugTakenError when the slug given is another post's. */
  create (write: PostWriteInput, author: string, now: Date): Promise<Post>
  /**
   * Replaces the client-set fields when the row is still at `expectedRevision`:
   * the check and the write are one statement, so of two racing writers one gets `stale`.
   */
  replace (id: number, write: PostWriteInput, expectedRevision: number, now: Date): Promise<WriteResult<Post> | { readonly outcome: 'slug-taken' }>
  delete (id: number, expectedRevision: number): Promise<WriteResult<true>>
  /** Every tag on a post `viewer` may see, with how many such posts hold it. */
  tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>>
  /**
   * The scheduled switch (contract §11): a post still `scheduled` at `expectedRevision` becomes
   * `published` with `publish_at` cleared and `published_at` as given, in one compare-and-set, so
   * of several instances racing (or an edit racing the switch) one wins and the others get `stale`.
   */
  publishScheduled (id: number, expectedRevision: number, publishedAt: string | null, now: Date): Promise<WriteResult<Post>>
  /** Up to `limit` scheduled posts whose `publish_at` is not after `now`, earliest first. */
  due (now: Date, limit: number): Promise<DuePost[]>
  /** The earliest `publish_at` of any scheduled post, or null when none is scheduled. */
  nextDue (): Promise<Date | null>
}

/** A scheduled post whose time has come, as the switch needs it. */
export interface DuePost {
  readonly id: number
  readonly revision: number
  readonly publishAt: string
  readonly publishedAt: string | null
}

/** A post's history: one revision per change, numbered by the post's revision, kept newest `keep`. */
export interface RevisionStore {
  /** Records `post` as it is after a change by `editor`, and drops all but the newest `keep` revisions. */
  record (post: Post, editor: string, now: Date, keep: number): Promise<void>
  find (postId: number, number: number): Promise<Revision | null>
  /** Newest first unless `query.sort` says otherwise; sorted by `number`. */
  list (postId: number, query: ListQuery<'number', Record<string, never>>): Promise<ListPage<RevisionSummary>>
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

/** Who, what and where an Idempotency-Key was used: a key is scoped to principal, method and path. */
export interface IdempotencyScope {
  readonly principal: string
  readonly method: string
  readonly path: string
  readonly key: string
}

/** A response as first sent (before content coding), kept to be replayed byte for byte. */
export interface StoredResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** What a claim on a key found: it is ours now, or someone's with another body, still running, or done. */
export type ClaimResult =
  | { readonly outcome: 'claimed', readonly token: string }
  | { readonly outcome: 'reused' }
  | { readonly outcome: 'running', readonly lockedUntil: Date }
  | { readonly outcome: 'done', readonly response: StoredResponse }

export interface IdempotencyStore {
  /**
   * Claims the key for a request whose body has `fingerprint`, unless a live record exists.
   * The claim is held for `lockMs` (a holder that dies is taken over after it); records live `ttlMs`.
   */
  claim (scope: IdempotencyScope, fingerprint: string, now: Date, opts: ClaimOptions): Promise<ClaimResult>
  /** Stores the response of a claimed key; false when the claim was lost (taken over). Run it in the effect's unit of work. */
  complete (scope: IdempotencyScope, token: string, response: StoredResponse): Promise<boolean>
  /** Gives up a claim without a stored response (the request failed), so the key can be retried. */
  release (scope: IdempotencyScope, token: string): Promise<void>
  /** Deletes expired records; returns how many. */
  sweep (now: Date): Promise<number>
  /** Renews the heartbeat lease of instance `owner` until `until`: its claims are alive while it lasts. */
  heartbeat (owner: string, until: Date): Promise<void>
  /**
   * Frees every running claim of `owner` and ends its lease: at start-up (a claim of this
   * instance's name left by a process that died is dead), and at shutdown. Returns how many.
   */
  releaseOwner (owner: string): Promise<number>
}

export interface ClaimOptions {
  /** How long a claim is held at most, whatever its owner's lease. */
  readonly lockMs: number
  /** How long a record lives. */
  readonly ttlMs: number
  /** The instance claiming: a claim is taken over as soon as its owner's heartbeat lease has lapsed. */
  readonly owner: string
}

/** A stretch of an export's file: `data` holds its bytes from `start` on. */
export interface FileChunk {
  readonly start: number
  readonly data: Uint8Array
}

/** How a run ended: the file is complete, or the job gives up with a reason. */
export type ExportOutcome =
  | { readonly status: 'succeeded', readonly size: number, readonly sha256: string }
  | { readonly status: 'failed', readonly error: string }

/**
 * Export jobs, a durable queue with leases, and their files in byte ranges. The worker's methods take
 * the lease it holds and do nothing (false, null) once that lease was lost to another worker.
 */
export interface ExportStore {
  create (owner: string, request: ExportRequest, version: { apiVersion: number, linkBase: string }, now: Date): Promise<ExportJob>
  /** The job if it exists and belongs to `owner`. */
  findById (id: number, owner: string): Promise<ExportJob | null>
  /**
   * Takes the oldest job that is pending, or running under a lease that has expired (its worker died),
   * with fewer than `maxAttempts` runs: it becomes `running` under a new lease until `now + leaseMs`,
   * and any file a previous run left is deleted. Run it in a unit of work; of several claimants one wins.
   */
  claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ExportLease | null>
  /** Jobs whose lease expired after their last allowed run: failed, with a reason. Run it in a unit of work. */
  expire (now: Date, maxAttempts: number): Promise<ExportJob[]>
  /** Sets how many posts the run will export, and extends the lease. */
  begin (lease: ExportLease, total: number, leaseUntil: Date, now: Date): Promise<boolean>
  /** Appends a stretch of the file (when given), records progress and extends the lease, together. */
  append (lease: ExportLease, chunk: { seq: number, start: number, data: Uint8Array } | null, exported: number, leaseUntil: Date, now: Date): Promise<boolean>
  /** Ends the run: the final state, and the lease cleared. Null when the lease was lost. */
  finish (lease: ExportLease, outcome: ExportOutcome, now: Date): Promise<ExportJob | null>
  /** Gives the job back to the queue (a shutdown, or a run that failed and may be retried). */
  release (lease: ExportLease, error: string | null, countAttempt: boolean, now: Date): Promise<boolean>
  /** Up to `limit` stretches of a file that overlap bytes `from`–`to` (inclusive), in order. */
  readChunks (id: number, from: number, to: number, limit: number): Promise<FileChunk[]>
  /** Deletes jobs (and their files) that finished before `cutoff`; returns how many. */
  deleteFinishedBefore (cutoff: Date): Promise<number>
}

/** One webhook to send, and how often it was tried. */
export interface WebhookDelivery {
  readonly id: string
  readonly exportId: number | null
  /** A subscription's delivery: the subscription, and the event it carries (its `webhook-id`). */
  readonly webhookId: number | null
  readonly eventId: number | null
  readonly eventType: string | null
  readonly url: string
  readonly payload: string
  readonly state: 'pending' | 'delivered' | 'failed'
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: string | null
  readonly createdAt: string
  readonly deliveredAt: string | null
}

export interface NewDelivery {
  readonly id: string
  readonly exportId?: number | null
  readonly webhookId?: number | null
  readonly eventId?: number | null
  readonly eventType?: string | null
  readonly url: string
  readonly payload: string
}

/** The webhook outbox: written with the state it announces, sent after commit, retried until delivered or given up. */
export interface WebhookStore {
  enqueue (delivery: NewDelivery, now: Date): Promise<void>
  /**
   * Takes up to `limit` due deliveries for `leaseMs` (attempts + 1); another sender skips them
   * meanwhile. A subscription's deliveries start in event order: one is taken only once every
   * earlier one of its subscription has been started.
   */
  claimDue (now: Date, leaseMs: number, limit: number): Promise<WebhookDelivery[]>
  delivered (id: string, now: Date, statusCode?: number): Promise<void>
  /** Tries again at `at` (when given), or gives up. */
  failedAttempt (id: string, error: string, at: Date | null, now: Date, statusCode?: number | null): Promise<void>
  findById (id: string): Promise<WebhookDelivery | null>
  /** A subscription's deliveries, newest first. */
  listByWebhook (webhookId: number, query: ListQuery<'created_at', Record<string, never>>): Promise<ListPage<WebhookDelivery>>
  /** Deletes a subscription's deliveries (it is being deleted). */
  deleteByWebhook (webhookId: number): Promise<void>
  /** Gives up a subscription's pending deliveries with `reason` (it was disabled). */
  failPending (webhookId: number, reason: string, now: Date): Promise<void>
  /** How many deliveries wait, and since when the oldest waits. */
  backlog (): Promise<{ pending: number, oldestCreatedAt: string | null }>
  /** Deletes finished deliveries older than `cutoff`. */
  deleteFinishedBefore (cutoff: Date): Promise<number>
}

/** What a change raises (contract §12), recorded in its unit of work. */
export interface EventInput {
  readonly type: string
  /** The resource's version-1 representation after the change (`post.deleted`: `{id}`). */
  readonly data: unknown
  /** Who sees it on the stream besides admins (the resource's owner); null: admins only. */
  readonly owner: string | null
  /** Whether every principal sees it (the events of a published post). */
  readonly public: boolean
  /** For this subscription alone (a ping): not on the stream, not fanned out to others. */
  readonly webhookId?: number
}

/** An event as the log keeps it; `data` is JSON. */
export interface StoredEvent {
  readonly id: number
  readonly type: string
  readonly occurredAt: string
  readonly owner: string | null
  readonly public: boolean
  readonly webhookId: number | null
  readonly data: string
}

/**
 * The event log. `record` belongs to a unit of work: the events are written with its other writes
 * (last, just before the commit) and their ids increase in commit order across the deployment.
 *
 * @example
 * await store.transaction(async uow => {
 *   const post = await uow.posts.create(input, 'alice', new Date())
 *   uow.events.record({ type: 'post.created', data: render(post), owner: 'alice', public: post.status === 'published' })
 * })
 */
export interface EventStore {
  /** Records events in this unit of work; outside one it throws. */
  record (...events: EventInput[]): void
  /** Up to `limit` events with ids above `after`, in id order. */
  list (after: number, limit: number): Promise<StoredEvent[]>
  /** The newest event's id (0 when none). */
  lastId (): Promise<number>
  /** The newest id retention has deleted (0 when none): a reader resuming before it missed events. */
  prunedThrough (): Promise<number>
  /** Deletes events older than `cutoff` with ids up to `upTo`; run it in a unit of work. */
  prune (cutoff: Date, upTo: number): Promise<number>
  /**
   * In a unit of work, takes the fan-out's position (the last event fanned out), or null when another
   * instance holds it; `fannedOut` moves it, in the same unit.
   */
  claimFanOut (): Promise<number | null>
  fannedOut (through: number): Promise<void>
  fanOutPosition (): Promise<number>
}

/**
 * Every table's repository; outside a unit of work each statement commits alone. A resource adds
 * its own by declaration merging from its folder (see store/module.ts).
 */
export interface Repositories {
  readonly posts: PostStore
  readonly revisions: RevisionStore
  readonly apiKeys: ApiKeyStore
  readonly idempotency: IdempotencyStore
  readonly exports: ExportStore
  readonly webhooks: WebhookStore
  readonly events: EventStore
}

/** The repositories of one transaction, and a place for what must happen only once it has committed. */
export interface UnitOfWork extends Repositories {
  /** Runs `fn` after the commit (never after a rollback): the place for webhooks and other side effects. */
  onCommit (fn: () => unknown): void
  /**
   * Tells every instance's `listen(channel)` once this unit of work commits (nothing on rollback):
   * background work that sleeps until a time wakes when another instance changes that time.
   */
  signal (channel: string): Promise<void>
}

export interface TransactionOptions {
  /** The request's signal: when it has fired by the time `fn` returns, the work is rolled back. */
  readonly signal?: AbortSignal
  /**
   * Called once `fn` has returned and `signal` was checked for the last time: the work will now be
   * committed, or fail with the whole commit. Until the commit (on SQLite, the end of the event
   * loop's turn) the request must not be answered as abandoned.
   */
  readonly onCommitting?: () => void
  /** Told about an onCommit callback that failed; the commit stands. */
  readonly onCallbackError?: (err: unknown) => void
}

/**
 * The service's persistence: one interface, one adapter per database.
 *
 * @example
 * const store = await openStore(config)   // SQLite file or PostgreSQL, by DATABASE_URL
 * await store.migrate()
 * const post = await store.transaction(async uow => {
 *   const p = await uow.posts.create({ title: 'Hi', content: '', status: 'published' }, 'alice', new Date())
 *   uow.onCommit(() => console.log('created', p.id))
 *   return p
 * })
 * await store.close()
 */
export interface Store extends Repositories {
  readonly kind: 'sqlite' | 'postgres'
  /** The store's circuit breaker: open while the database does not answer (src/store/circuit.ts). */
  readonly circuit: StoreCircuit
  /**
   * A unit of work: `fn` gets repositories bound to one transaction, which commits once when `fn`
   * resolves and rolls back when it throws or `signal` has fired. onCommit callbacks run after the
   * commit. Don't use the store's own repositories inside `fn` (on PostgreSQL they would need a
   * second connection, and would not see the transaction's writes). On SQLite the units of one turn
   * of the event loop share one transaction, each in a savepoint of its own, and one commit (one
   * sync of the disk): each is still all or nothing, and resolves only once committed.
   */
  transaction<T> (fn: (uow: UnitOfWork) => Promise<T>, opts?: TransactionOptions): Promise<T>
  /**
   * Calls `fn` whenever a unit of work on any instance sent `signal(channel)` (at most once per
   * commit; possibly more often). Resolves to a function that stops listening.
   */
  listen (channel: string, fn: () => void): Promise<() => Promise<void>>
  /** A random secret made once per database and shared by every instance (signs cursors). */
  serverSecret (): Promise<Buffer>
  /** Applies every migration not yet applied; safe to run from several instances at once. */
  migrate (): Promise<void>
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
