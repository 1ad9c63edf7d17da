import type { Actor } from '../domain/principal.ts'
import type { Kysely } from 'kysely'
import type { SharedMigration } from './migrations/column-types.ts'
import type { Database, DialectParts } from './tables.ts'

/**
 * A resource's part of the store, declared in the resource's own folder and listed by the registry:
 * its migrations (written once for both databases, named `<name>/NNNN-what` and numbered within
 * the module; src/store/migrations/plan.ts applies them after the core's, in the registry's order)
 * and its repository, which the store builds for itself and for every unit of work under `name`.
 * The folder also declares the types, by declaration merging:
 *
 * @example
 * declare module '../../store/tables.ts' { interface Database { tickets: TicketsTable } }
 * declare module '../../store/store.ts' { interface Repositories { readonly tickets: TicketsRepository } }
 * export const ticketsStore: StoreModule = { name: 'tickets', migrations: { 'tickets/0001-tickets': migration }, repository: (db, d) => new TicketsRepository(db, d) }
 */
export interface StoreModule {
  readonly name: string
  readonly migrations: Readonly<Record<string, SharedMigration>>
  /** The repository, outside a unit of work (`unit` undefined) or bound to one. */
  repository (db: Kysely<Database>, dialect: DialectParts, unit?: UnitScope): unknown
}

/** What a repository bound to a unit of work may ask of it. */
export interface UnitScope {
  /** Who the unit's changes are by (TransactionOptions.actor): its events carry it. */
  readonly actor: Actor
  /**
   * Runs `fn` once the unit's own work is done, just before its commit, in the unit's transaction
   * (the event log writes a unit's events then, holding its ordering lock for the commit alone).
   */
  beforeCommit (fn: (now: Date) => Promise<void>): void
}
