import { openStore } from '../../src/context.ts'
import type { Store } from '../../src/store/store.ts'
import { freshDatabase, type StoreKind } from '../helper.ts'
import { before, closeWhenDone, once } from './hooks.ts'

/**
 * A migrated store on a fresh database; `open` gives another store on the same database. Closed,
 * with its database, when what made it ends (test/support/hooks.ts), or earlier by `close()`.
 */
export interface FreshStore {
  store: Store
  url: string
  open (): Promise<Store>
  close (): Promise<void>
}

export async function freshStore (kind: StoreKind, { migrate = true } = {}): Promise<FreshStore> {
  const db = await freshDatabase(kind)
  const extra: Store[] = []
  const open = async () => {
    const s = await openStore({ databaseUrl: db.url, pgPoolMax: 5 })
    extra.push(s)
    return s
  }
  const store = await openStore({ databaseUrl: db.url, pgPoolMax: 5 })
  if (migrate) await store.migrate()
  const f: FreshStore = {
    store,
    url: db.url,
    open,
    close: once(async () => {
      for (const s of extra) await s.close().catch(() => {})
      await store.close().catch(() => {})
      await db.drop()
    }),
  }
  closeWhenDone(f.close)
  return f
}

/**
 * A fresh store for the enclosing `describe`: made before its tests, closed after them. Read
 * `store`, `url` and `open` from the returned object once the tests run.
 */
export function useFreshStore (kind: StoreKind): FreshStore {
  let f: FreshStore | undefined
  before(async () => { f = await freshStore(kind) })
  const made = () => {
    if (f === undefined) throw new Error('the fresh store is made before the tests run')
    return f
  }
  return {
    get store () { return made().store },
    get url () { return made().url },
    open: async () => await made().open(),
    close: async () => { await made().close() },
  }
}
