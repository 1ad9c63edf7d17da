import type { Actor } from '../domain/principal.ts'
import type { StoreCircuit } from './circuit.ts'

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

/** What a conditional write saw: done, the row is gone, or it changed meanwhile. */
export type WriteResult<T> =
  | { readonly outcome: 'done', readonly value: T }
  | { readonly outcome: 'missing' }
  | { readonly outcome: 'stale' }

export interface ApiKeyRecord {
  readonly id: string
  readonly name: string
  readonly scopes: readonly string[]
  readonly hash: string
  readonly createdAt: string
  readonly revokedAt: string | null
  /** The person whose key it is (a key a user made, acting as them); null for the command line's. */
  readonly userId: string | null
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

/** What a change raises, recorded in its unit of work. */
export interface EventInput {
  readonly type: string
  /** The resource's version-1 representation after the change (a deletion's: `{id}`). */
  readonly data: unknown
  /** Who sees it on the stream besides admins (the resource's owner); null: admins only. */
  readonly owner: string | null
  /** Whether every principal sees it (the events of what everyone may read). */
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
  /** Who caused it, as JSON (`{kind, id, name}`); null for events kept from before actors were. */
  readonly actor: string | null
}

/**
 * The event log. `record` belongs to a unit of work: the events are written with its other writes
 * (last, just before the commit) and their ids increase in commit order across the deployment.
 *
 * @example
 * await store.transaction(async uow => {
 *   const ticket = await uow.tickets.insert('alice', 'OPEN', { subject }, [], new Date())
 *   uow.events.record({ type: 'ticket.opened', data: render(ticket), owner: 'alice', public: false })
 * })
 */
export interface EventStore {
  /** Records events in this unit of work; outside one it throws. */
  record (...events: EventInput[]): void
  /** How many events this unit of work has written so far (0 outside one). */
  readonly written: number
  /** Up to `limit` events with ids above `after`, in id order. */
  list (after: number, limit: number): Promise<StoredEvent[]>
  /** As `list`, without the events' data (what the fan-out needs to match subscriptions). */
  heads (after: number, limit: number): Promise<Array<Omit<StoredEvent, 'data' | 'actor'>>>
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
  /**
   * Of the next `limit` events after `after`: the last one's id when none is addressed to one
   * subscription (a ping), else null; `after` itself when there is none. Reads no event's data,
   * and no more than `limit` ids however far behind `after` is.
   */
  untargetedThrough (after: number, limit: number): Promise<number | null>
  fanOutPosition (): Promise<number>
}

/**
 * Every table's repository; outside a unit of work each statement commits alone. A resource adds
 * its own by declaration merging from its folder (see store/module.ts), under its module's name.
 */
export interface Repositories {
  readonly apiKeys: ApiKeyStore
  readonly idempotency: IdempotencyStore
  /** The event log (its tables and repository are the events facility's store module). */
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
  /** Who the unit's changes are by: its events carry it (absent: the service itself, `system`). */
  readonly actor?: Actor
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
 * const key = await store.transaction(async uow => {
 *   const k = await uow.apiKeys.create({ id, name: 'ci', scopes: ['admin'], hash }, new Date())
 *   uow.onCommit(() => console.log('created', k.id))
 *   return k
 * })
 * await store.close()
 */
export interface Store extends Repositories {
  readonly kind: 'sqlite' | 'postgres'
  /** The store's circuit breaker: open while the database does not answer (src/store/circuit.ts). */
  readonly circuit: StoreCircuit
  /**
   * The event log as a reader that polls it in the background reads it: the same database, but its
   * failures and successes are not the circuit's (a poll that fails while requests recover must not
   * open it again, nor one that succeeds close it).
   */
  readonly watch: Pick<Repositories, 'events'>
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
  /**
   * Calls `fn`, before the unit's `transaction` resolves, whenever a unit of work of this process
   * that wrote events has ended, and whenever one has failed (a read beside it may have seen what
   * it rolled back): what a representation was made from may have changed. Returns a function
   * that stops it.
   */
  afterEvents (fn: () => void): () => void
  /** A random secret made once per database and shared by every instance (signs cursors). */
  serverSecret (): Promise<Buffer>
  /** Applies every migration not yet applied; safe to run from several instances at once. */
  migrate (): Promise<void>
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
