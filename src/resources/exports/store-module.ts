import type { ExportStore } from './store.ts'
import type { StoreModule } from '../../store/module.ts'
import * as m0004 from './0004-exports.ts'
import * as m0001 from './0001-wxr.ts'
import { ExportsRepository } from './exports-repository.ts'

/** Its first migration kept the name it shipped with; it also made the core's webhook outbox. */
export const exportsStore: StoreModule = {
  name: 'exports',
  migrations: { '0004-exports': m0004.migration, 'exports/0001-wxr': m0001.migration },
  repository: (db, dialect): ExportStore => new ExportsRepository(db, dialect),
}
