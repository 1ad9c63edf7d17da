import type { Config } from '../config.ts'
import type { StoreModule } from './module.ts'
import type { Store } from './store.ts'

type StoreSettings = Pick<Config, 'databaseUrl' | 'pgPoolMax'> & Partial<Pick<Config, 'pgConnectTimeoutMs' | 'pgStatementTimeoutMs' | 'sqliteSynchronous' | 'requestTimeoutMs' | 'storeBudgetMs' | 'storeCircuitFailures'>>

/**
 * Opens the store DATABASE_URL names: `sqlite:<file>` or `postgres://…`, with the tables and
 * repositories of `modules` (the service opens it with the registry's: src/context.ts).
 */
export async function openStore (config: StoreSettings, modules: readonly StoreModule[]): Promise<Store> {
  if (config.databaseUrl.startsWith('sqlite:')) {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.ts')
    return openSqliteStore(config.databaseUrl.slice('sqlite:'.length), config.sqliteSynchronous !== undefined ? { modules, synchronous: config.sqliteSynchronous } : { modules })
  }
  const { openPostgresStore } = await import('./postgres/postgres-store.ts')
  return openPostgresStore(config.databaseUrl, {
    poolMax: config.pgPoolMax,
    modules,
    ...(config.pgConnectTimeoutMs !== undefined ? { connectTimeoutMs: config.pgConnectTimeoutMs } : {}),
    ...(config.pgStatementTimeoutMs !== undefined ? { statementTimeoutMs: config.pgStatementTimeoutMs } : {}),
    ...(config.requestTimeoutMs !== undefined ? { requestTimeoutMs: config.requestTimeoutMs } : {}),
    ...(config.storeBudgetMs !== undefined ? { storeBudgetMs: config.storeBudgetMs } : {}),
    ...(config.storeCircuitFailures !== undefined ? { circuitFailures: config.storeCircuitFailures } : {}),
  })
}
