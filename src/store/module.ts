import type { Kysely } from 'kysely'
import type { SharedMigration } from './migrations/column-types.ts'
import type { Database, DialectParts } from './tables.ts'

/**
 * A resource's part of the store, declared in the resource's own folder and listed by the registry:
 * its migrations (written once for both databases, named `NNNN-what`, numbered after the newest
 * one in the project) and its repository, which the store builds for itself and for every unit of
 * work under `name`. The folder also declares the types, by declaration merging:
 *
 * @example
 * declare module '../../store/tables.ts' { interface Database { orders: OrdersTable } }
 * declare module '../../store/store.ts' { interface Repositories { readonly orders: OrdersRepository } }
 * export const ordersStore: StoreModule = { name: 'orders', migrations: { '0003-orders': migration }, repository: (db, d) => new OrdersRepository(db, d) }
 */
export interface StoreModule {
  readonly name: string
  readonly migrations: Readonly<Record<string, SharedMigration>>
  repository (db: Kysely<Database>, dialect: DialectParts): unknown
}
