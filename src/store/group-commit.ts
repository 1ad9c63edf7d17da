import { CompiledQuery, type Kysely } from 'kysely'
import { addLoopStall } from '../loop-stalls.ts'
import type { Database } from './tables.ts'

const SAVEPOINT = CompiledQuery.raw('SAVEPOINT unit')
const RELEASE = CompiledQuery.raw('RELEASE unit')
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO unit')
const COMMIT = CompiledQuery.raw('COMMIT')
const ROLLBACK = CompiledQuery.raw('ROLLBACK')

/**
 * What the other units of a group get when SQLite rolled the whole transaction back during one
 * unit: their writes were lost with it. `SQLITE_ABORT_ROLLBACK` is SQLite's own code for a
 * statement ended by a rollback, so the answer is 503 (src/store/errors.ts).
 */
export class GroupRolledBack extends Error {
  readonly code = 'SQLITE_ABORT_ROLLBACK'

  constructor (cause: unknown) {
    super('The transaction this write was part of was rolled back by the database; nothing was committed.', { cause })
  }
}

/** One unit of work waiting for its group: what it runs, and how its caller learns the outcome. */
interface Unit {
  readonly work: (conn: Kysely<Database>) => Promise<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (err: unknown) => void
}

/** The units of one turn of the event loop (or of the turns while the last group's sync ran), run in one transaction. */
class Group {
  readonly units: Unit[] = []
  /** Units whose work is done, told of the outcome once the group's connection is given back. */
  readonly done: { unit: Unit, value: unknown }[] = []
  /** Set in the turn's check phase: once the queue is empty the group commits. */
  turnEnded = false
  private waiting: (() => void) | null = null

  wake (): void {
    const resolve = this.waiting
    this.waiting = null
    resolve?.()
  }

  async nextUnit (): Promise<void> {
    await new Promise<void>(resolve => { this.waiting = resolve })
  }
}

/**
 * Group commit for a database with one writer whose commit waits for the disk (SQLite in WAL mode
 * at `synchronous = FULL` syncs the log at every COMMIT). The units of work started in one turn of
 * the event loop run one after another in one transaction, each inside its own savepoint, and the
 * transaction commits once, in the turn's check phase: one sync for every write of the turn
 * instead of one per request. Where the log is synced after COMMIT, off the loop, a group also
 * takes the units of every turn while the last group's sync runs (`durable`, below).
 *
 * Each unit keeps its own all-or-nothing: one that throws is rolled back to its savepoint, alone,
 * and its caller gets the error at once. The others learn their outcome only with the COMMIT:
 * nobody is told "done" before the writes are on disk, and when the COMMIT fails (or SQLite
 * rolled the whole transaction back on its own, as it may on a full disk or an I/O error) every
 * unit of the group gets the error, none a success. Readers outside the group wait for the
 * connection until the group has committed (and, where the driver syncs the log after COMMIT, for
 * that sync before their read returns), so nobody reads what is not yet durable.
 */
export class GroupCommit {
  private open: Group | null = null
  /** Settles once the last group started has told its units (a group may still wait for a sync, without the connection). */
  private last: Promise<void> = Promise.resolve()
  private readonly begin: CompiledQuery

  /**
   * `durable`: where the log is synced after COMMIT, off the event loop (src/store/sqlite/wal-sync.ts);
   * its `settled` resolves once every commit made so far is on disk. A group starts only then, and takes every
   * unit that arrives meanwhile: while one sync runs, the next cannot start, so a group that
   * committed during it would wait for it anyway, and would have cost a COMMIT of its own (~0.6 ms
   * of CPU, whatever it carries) for the writes that the group after it could have carried. The
   * connection stays free for readers while the group waits.
   */
  constructor (private readonly db: Kysely<Database>, begin: string, private readonly durable: { settled: () => Promise<void> } | null = null) {
    this.begin = CompiledQuery.raw(begin)
  }

  /** Runs `work` in this turn's group (opening one if none is open); resolves once it is committed. */
  async run<T> (work: (conn: Kysely<Database>) => Promise<T>): Promise<T> {
    return await new Promise<T>((resolve, reject) => {
      const group = this.open ?? this.start()
      group.units.push({ work, resolve: resolve as (value: unknown) => void, reject })
      group.wake()
    })
  }

  private start (): Group {
    const group = new Group()
    this.open = group
    // A failed sync fails the units that waited for it; this group's commit gets a sync of its own.
    const synced = this.durable === null ? Promise.resolve() : this.durable.settled().catch(() => {})
    const ran = synced.then(async () => {
      setImmediate(() => {
        // Units of later turns go to the next group, even if one of this turn's is still running.
        this.close(group)
        group.turnEnded = true
        group.wake()
      })
      // The connection is given back once the COMMIT is on disk: where COMMIT does not wait for
      // the disk, the store's driver waits for the log's sync (src/store/sqlite/wal-sync.ts), and
      // the loop serves other requests meanwhile.
      await this.db.connection().execute(async conn => { await this.drive(group, conn) })
    })
    this.last = ran.then(
      () => { for (const d of group.done.splice(0)) d.unit.resolve(d.value) },
      (err: unknown) => {
        // No connection (the store is closing: nothing ran), or the sync failed: every unit not
        // yet told fails alike.
        this.close(group)
        for (const d of group.done.splice(0)) d.unit.reject(err)
        for (const unit of group.units.splice(0)) unit.reject(err)
      })
    return group
  }

  /** Units that arrive after this go to a new group. */
  private close (group: Group): void {
    if (this.open === group) this.open = null
  }

  private async drive (group: Group, conn: Kysely<Database>): Promise<void> {
    const done = group.done
    const failAll = (err: unknown) => {
      this.close(group)
      for (const d of done.splice(0)) d.unit.reject(err)
      for (const unit of group.units.splice(0)) unit.reject(err)
    }
    const rollBackAll = async (err: unknown) => {
      await conn.executeQuery(ROLLBACK).catch(() => {})
      failAll(err)
    }
    try {
      await conn.executeQuery(this.begin)
    } catch (err) {
      // No transaction was opened, so there is nothing to roll back.
      failAll(err)
      return
    }
    for (;;) {
      const unit = group.units.shift()
      if (unit === undefined) {
        if (group.turnEnded) break
        await group.nextUnit()
        continue
      }
      try {
        await conn.executeQuery(SAVEPOINT)
        const value = await unit.work(conn)
        await conn.executeQuery(RELEASE)
        done.push({ unit, value })
      } catch (err) {
        try {
          await conn.executeQuery(ROLLBACK_TO)
          await conn.executeQuery(RELEASE)
        } catch {
          // The savepoint is gone: SQLite rolled the whole transaction back (a full disk, an I/O
          // error). The units before this one lost their writes too; they are told so by an error
          // of the store (a 503 to a client), not by this unit's own, which may be an answer to
          // this unit's request alone.
          unit.reject(err)
          await rollBackAll(new GroupRolledBack(err))
          return
        }
        unit.reject(err)
      }
    }
    this.close(group)
    const committing = performance.now()
    try {
      await conn.executeQuery(COMMIT)
      // better-sqlite3 runs the COMMIT (its writes, now and then a checkpoint) synchronously: the loop was blocked.
      addLoopStall(performance.now() - committing)
    } catch (err) {
      await rollBackAll(err)
    }
  }

  /** Resolves once the groups started so far have told their units and nothing holds the connection (before the store closes it). */
  async drain (): Promise<void> {
    await this.last
    await this.db.connection().execute(async () => {})
  }
}
