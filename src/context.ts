import { STORE_MODULES } from './registry.ts'
import { openStore as openStoreWith } from './store/open-store.ts'
import type { Store } from './store/store.ts'

/** Opens the store DATABASE_URL names with the tables and repositories of every registered resource. */
export async function openStore (config: Parameters<typeof openStoreWith>[0]): Promise<Store> {
  return await openStoreWith(config, STORE_MODULES)
}
