import type { Config } from '../config.ts'
import type { Store } from './store.ts'

/** Opens the store DATABASE_URL names: `sqlite:<file>` or `postgres://…`. */
export async function openStore (config: Pick<Config, 'databaseUrl' | 'pgPoolMax'>): Promise<Store> {
  if (config.databaseUrl.startsWith('sqlite:')) {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.ts')
    return openSqliteStore(config.databaseUrl.slice('sqlite:'.length))
  }
  const { openPostgresStore } = await import('./postgres/postgres-store.ts')
  return openPostgresStore(config.databaseUrl, { poolMax: config.pgPoolMax })
}
