import type { Migration, MigratorProps } from 'kysely'
import type { StoreModule } from '../module.ts'
import type { ColumnTypes, SharedMigration } from './column-types.ts'

/**
 * The migrations named before they were named per module: frozen, and kept under these names so
 * that a database made then upgrades unchanged. Every later one is `<module>/NNNN-what`.
 */
const LAST_GLOBAL_NUMBER = 4

/** Every migration, by name, and the order they apply in. */
export interface MigrationPlan {
  readonly migrations: Readonly<Record<string, Migration>>
  readonly order: readonly string[]
}

/**
 * The core's migrations, then each module's in the order the modules are listed (the registry's),
 * each part in name order. A module's migrations are named `<its name>/NNNN-what`, so two
 * branches adding one each cannot collide, and a module numbers its own without reading others.
 */
export function migrationPlan (core: Readonly<Record<string, Migration>>, modules: readonly StoreModule[], types: ColumnTypes): MigrationPlan {
  const migrations: Record<string, Migration> = { ...core }
  const order = Object.keys(core).sort()
  for (const m of modules) {
    const own = Object.entries(m.migrations as Record<string, SharedMigration>).sort(([a], [b]) => a.localeCompare(b))
    for (const [name, migration] of own) {
      const global = /^(\d{4})-/.exec(name)
      if (global !== null ? Number(global[1]) > LAST_GLOBAL_NUMBER : !name.startsWith(`${m.name}/`)) {
        throw new Error(`migration ${name} of ${m.name}: name it ${m.name}/NNNN-what`)
      }
      if (name in migrations) throw new Error(`two migrations are named ${name}`)
      migrations[name] = migration(types)
      order.push(name)
    }
  }
  return { migrations, order }
}

/**
 * What Kysely's Migrator needs to apply a plan in its order. Unordered migrations are allowed: a
 * module's new migration runs even when a later module's was applied before it (they touch
 * different tables), so branches that each add one can land in any order.
 */
export function migratorProps (plan: MigrationPlan): Pick<MigratorProps, 'provider' | 'nameComparator' | 'allowUnorderedMigrations'> {
  const rank = new Map(plan.order.map((name, i) => [name, i]))
  return {
    provider: { getMigrations: async () => ({ ...plan.migrations }) },
    // A name no longer in the plan (applied by a newer version of the service) sorts last.
    nameComparator: (a, b) => (rank.get(a) ?? Infinity) - (rank.get(b) ?? Infinity) || a.localeCompare(b),
    allowUnorderedMigrations: true,
  }
}
