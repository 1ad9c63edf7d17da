import type { Kysely } from 'kysely'
import type { StoreModule } from '../../store/module.ts'
import { type DialectParts, type Database, iso, type Timestamp } from '../../store/tables.ts'
import * as m0001 from './0001-site-settings.ts'

/** What an admin sets; anything absent takes its default. Images are media ids. */
export interface StoredSettings {
  readonly title?: string
  readonly description?: string
  readonly language?: string
  readonly logo?: string
  readonly icon?: string
  readonly cover_image?: string
  readonly accent_color?: string
  readonly navigation?: readonly { readonly label: string, readonly url: string }[]
  readonly posts_per_page?: number
}

/** The one row: revision 0 and the epoch until anyone writes it. */
export interface SettingsRow {
  readonly id: 'site'
  readonly settings: StoredSettings
  readonly revision: number
  readonly updatedAt: string
}

declare module '../../store/tables.ts' {
  interface Database { site_settings: { id: number, settings: string, revision: number, updated_at: Timestamp } }
}
declare module '../../store/store.ts' { interface Repositories { readonly siteSettings: SiteSettingsRepository } }

const EPOCH = '1970-01-01T00:00:00.000Z'

export class SiteSettingsRepository {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async read (): Promise<SettingsRow> {
    const row = await this.db.selectFrom('site_settings').selectAll().where('id', '=', 1).executeTakeFirst()
    if (row === undefined) return { id: 'site', settings: {}, revision: 0, updatedAt: EPOCH }
    return { id: 'site', settings: JSON.parse(row.settings) as StoredSettings, revision: Number(row.revision), updatedAt: iso(row.updated_at) }
  }

  /** Writes `settings` over revision `expected`; null when another write came first. */
  async write (settings: StoredSettings, expected: number, now: Date): Promise<SettingsRow | null> {
    const values = { settings: JSON.stringify(settings), revision: expected + 1, updated_at: this.dialect.timestamp(now) }
    const done = expected === 0
      ? await this.db.insertInto('site_settings').values({ id: 1, ...values }).onConflict(oc => oc.column('id').doNothing()).executeTakeFirst()
      : await this.db.updateTable('site_settings').set(values).where('id', '=', 1).where('revision', '=', expected).executeTakeFirst()
    const changed = 'numInsertedOrUpdatedRows' in done ? done.numInsertedOrUpdatedRows : done.numUpdatedRows
    if (changed === undefined || changed === 0n) return null
    return { id: 'site', settings, revision: expected + 1, updatedAt: now.toISOString() }
  }
}

export const siteSettingsStore: StoreModule = {
  name: 'siteSettings',
  migrations: { 'siteSettings/0001-site-settings': m0001.migration },
  repository: (db, dialect) => new SiteSettingsRepository(db, dialect),
}
