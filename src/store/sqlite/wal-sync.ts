import fs from 'node:fs/promises'
import type { Dialect, Driver, DatabaseConnection } from 'kysely'

/** Syncs the write-ahead log's data to disk: fdatasync(2), run on libuv's thread pool. */
export type SyncLog = (log: fs.FileHandle) => Promise<void>

const fdatasync: SyncLog = async log => { await log.datasync() }

/**
 * What a failed sync of the log gives every write and read that waited for it: SQLite's own
 * extended code for a failed sync (SQLITE_IOERR_FSYNC), which the store reports as unavailable
 * (503, retry later; src/store/errors.ts).
 */
export class LogSyncFailed extends Error {
  readonly code = 'SQLITE_IOERR_FSYNC'

  constructor (cause: unknown) {
    super('The database could not sync its log to disk; whether the last writes are durable is unknown.', { cause })
  }
}

/**
 * The durable commit, off the event loop. At `synchronous = FULL`, SQLite syncs its write-ahead
 * log inside COMMIT, and better-sqlite3 runs COMMIT on the event loop: every sync (1–2 ms on an
 * SSD, far more on a network disk) stalled every request in flight. Instead the connection runs at
 * `synchronous = NORMAL` (COMMIT writes the log, and syncs it only at a checkpoint) and this class
 * syncs the log after each COMMIT, on libuv's thread pool, while the loop serves other requests.
 * The promise stays FULL's, kept where every statement ends, the driver's release of a
 * connection (`readsAfterSync`, below): a connection that changed rows (a group's transaction, an
 * autocommit write) is given back to its caller once that commit is on disk, so no write is
 * acknowledged before; a read waits for the syncs of the commits before it, so nobody reads what is
 * not on disk. One sync runs at a time; commits made while it runs share the next one.
 */
export class WalSync {
  /** Commits made so far, and how many of them are known to be on disk (or failed to get there). */
  private committed = 0
  private synced = 0
  /** The sync in flight, and the commits it covers (1 to `target`); null while every commit is synced. */
  private round: { target: number, done: Promise<void> } | null = null
  private log: fs.FileHandle | null = null
  /** Syncs of the log so far (a test reads it). */
  syncs = 0

  /** The connection's rows changed so far when the last commit was counted. */
  private changesAtCommit: number | null

  /**
   * `changes`: the rows the connection has changed so far (SQLite's total_changes()), which tells
   * a write committed on its own, outside any transaction of the store's, from a read; null inside a transaction.
   */
  constructor (private readonly file: string, private readonly changes: () => number | null, private readonly sync: SyncLog = fdatasync) {
    this.changesAtCommit = changes()
  }

  /** A commit was made (rows changed since the last): its number, to wait for with `until`. */
  private commit (): number {
    this.changesAtCommit = this.changes()
    this.committed++
    this.next()
    return this.committed
  }

  /**
   * The connection was given back: resolves once what it did is on disk, and every commit before
   * it. Whatever changed rows since the last commit counted (a group's transaction, an autocommit
   * write) is a commit to sync; a read waits for the syncs already due.
   */
  async released (): Promise<void> {
    const changes = this.changes()
    if (changes !== null && changes !== this.changesAtCommit) await this.until(this.commit())
    else await this.settled()
  }

  /** Resolves once commit `n` is on disk; rejects with LogSyncFailed if the sync that was to make it so failed. */
  async until (n: number): Promise<void> {
    while (this.synced < n && this.round !== null) {
      const round = this.round
      try {
        await round.done
      } catch (err) {
        // A failed sync fails its own commits; later ones wait for the next sync.
        if (n <= round.target) throw err
      }
    }
  }

  /** Resolves once every commit made so far is on disk (what a reader waits for). */
  async settled (): Promise<void> {
    if (this.synced < this.committed) await this.until(this.committed)
  }

  /** Starts a sync for the commits not yet synced, unless one is running (it starts the next when it ends). */
  private next (): void {
    if (this.round !== null || this.synced >= this.committed) return
    const round = { target: this.committed, done: Promise.resolve() }
    // Set before the sync starts: a round that ends at once clears it, and starts the next.
    this.round = round
    round.done = this.syncRound(round)
    // Awaited by the writers and readers of these commits; a round nobody waits for must not be an unhandled rejection.
    round.done.catch(() => {})
  }

  private async syncRound (round: { target: number }): Promise<void> {
    try {
      this.log ??= await fs.open(`${this.file}-wal`, 'r+')
      await this.sync(this.log)
      this.syncs++
    } catch (err) {
      // Whether these commits reached the disk is unknown: each of their writers and readers is
      // told so (a 503); later commits sync again, their own writes with them.
      throw new LogSyncFailed(err)
    } finally {
      this.synced = round.target
      this.round = null
      this.next()
    }
  }

  /** Waits for the last sync, and closes the log's handle. */
  async close (): Promise<void> {
    await this.settled().catch(() => {})
    await this.log?.close()
    this.log = null
  }
}

/**
 * `dialect` with statements that return only once every commit before them, and their own, is on
 * disk: a connection given back (after a read, an autocommit write, or a write's transaction,
 * which waits for its own commit anyway) waits for `sync.released()`, once the connection is free
 * for its next user.
 */
export function readsAfterSync (dialect: Dialect, sync: WalSync): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: db => dialect.createIntrospector(db),
    createDriver: () => new SettledDriver(dialect.createDriver(), sync),
  }
}

class SettledDriver implements Driver {
  constructor (private readonly driver: Driver, private readonly sync: WalSync) {}

  async init (): Promise<void> { await this.driver.init() }
  async acquireConnection (): Promise<DatabaseConnection> { return await this.driver.acquireConnection() }
  async beginTransaction (...args: Parameters<Driver['beginTransaction']>): Promise<void> { await this.driver.beginTransaction(...args) }
  async commitTransaction (connection: DatabaseConnection): Promise<void> { await this.driver.commitTransaction(connection) }
  async rollbackTransaction (connection: DatabaseConnection): Promise<void> { await this.driver.rollbackTransaction(connection) }
  async savepoint (...args: Parameters<NonNullable<Driver['savepoint']>>): Promise<void> { await this.driver.savepoint!(...args) }
  async rollbackToSavepoint (...args: Parameters<NonNullable<Driver['rollbackToSavepoint']>>): Promise<void> { await this.driver.rollbackToSavepoint!(...args) }
  async releaseSavepoint (...args: Parameters<NonNullable<Driver['releaseSavepoint']>>): Promise<void> { await this.driver.releaseSavepoint!(...args) }

  async releaseConnection (connection: DatabaseConnection): Promise<void> {
    await this.driver.releaseConnection(connection)
    await this.sync.released()
  }

  async destroy (): Promise<void> {
    await this.sync.close()
    await this.driver.destroy()
  }
}
