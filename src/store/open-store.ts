import type { Config } from '../config.ts'
import { RESOURCES } from '../registry.ts'
import type { Store } from './store.ts'

type StoreSettings = Pick<Config, 'databaseUrl' | 'pgPoolMax'> & Partial<Pick<Config, 'pgConnectTimeoutMs' | 'pgStatementTimeoutMs' | 'sqliteSynchronous' | 'requestTimeoutMs' | 'storeBudgetMs' | 'storeCircuitFailures'>>

/** The tables and repositories of every registered resource. */
export const STORE_MODULES = RESOURCES.flatMap(r => r.store ?? [])

/** Opens the store DATABASE_URL names: `sqlite:<file>` or `postgres://…`, with every registered resource's tables. */
export async function openStore (config: StoreSettings): Promise<Store> {
  const modules = STORE_MODULES
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
