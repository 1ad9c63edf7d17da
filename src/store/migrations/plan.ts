import type { Migration, MigratorProps } from 'kysely'
import type { ColumnTypes, SharedMigration } from './column-types.ts'

/**
 * The migrations named before they were named per module: frozen, and kept under these names so
 * that a database made then upgrades unchanged. Every later one is `<module>/NNNN-what`.
 */
const LAST_GLOBAL_NUMBER = 4

/** A store module's name and migrations (src/store/module.ts), all the plan reads of it. */
export interface MigrationsOf {
  readonly name: string
  readonly migrations: Readonly<Record<string, SharedMigration>>
}

/** Every migration, by name, and the order they apply in. */
export interface MigrationPlan {
  readonly migrations: Readonly<Record<string, Migration>>
  readonly order: readonly string[]
}

/**
 * Every migration in the order it applies: first those named before migrations were named per
 * module (`0001-initial` … `0004-…`, wherever they live now), in name order, as they always
 * applied; then the core's (`core/NNNN-what`); then each module's in the order the modules are
 * listed (the registry's), each part in name order. A module's migrations are named
 * `<its name>/NNNN-what`, so two branches adding one each cannot collide, and a module numbers
 * its own without reading other folders.
 */
export function migrationPlan (core: Readonly<Record<string, Migration>>, modules: readonly MigrationsOf[], types: ColumnTypes): MigrationPlan {
  const parts = [
    { name: 'core', migrations: core },
    ...modules.map(m => ({ name: m.name, migrations: Object.fromEntries(Object.entries(m.migrations).map(([n, f]) => [n, f(types)])) })),
  ]
  const migrations: Record<string, Migration> = {}
  const global: string[] = []
  const named: string[] = []
  for (const part of parts) {
    for (const name of Object.keys(part.migrations).sort()) {
      const number = /^(\d{4})-/.exec(name)?.[1]
      if (number !== undefined ? Number(number) > LAST_GLOBAL_NUMBER : !name.startsWith(`${part.name}/`)) {
        throw new Error(`migration ${name} of ${part.name}: name it ${part.name}/NNNN-what`)
      }
      if (name in migrations) throw new Error(`two migrations are named ${name}`)
      migrations[name] = part.migrations[name]!
      ;(number !== undefined ? global : named).push(name)
    }
  }
  return { migrations, order: [...global.sort(), ...named] }
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
