import type { ImportStore } from './store.ts'
import type { StoreModule } from '../../store/module.ts'
import * as m0001 from './0001-imports.ts'
import { ImportsRepository } from './imports-repository.ts'

export const importsStore: StoreModule = {
  name: 'imports',
  migrations: { 'imports/0001-imports': m0001.migration },
  repository: (db, dialect): ImportStore => new ImportsRepository(db, dialect),
}
