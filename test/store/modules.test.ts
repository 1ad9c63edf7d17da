import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type Kysely, sql } from 'kysely'
import { buildCatalogue } from '../../src/catalogue.ts'
import type { StoreModule } from '../../src/store/module.ts'
import { STORE_MODULES } from '../../src/context.ts'
import { type OwnedRecord, OwnedRows } from '../../src/store/owned-rows.ts'
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { freshDatabase, type StoreKind, storeKinds } from '../helper.ts'

/** A resource's store part as a new resource would write it: one owned table with child rows. */
interface Ticket extends OwnedRecord { subject: string, notes?: { text: string }[] }
const ticketsStore: StoreModule = {
  name: 'tickets',
  migrations: {
    'tickets/0001-tickets': t => ({
      async up (db: Kysely<unknown>) {
        await sql.raw(`CREATE TABLE tickets (id ${t.id}, owner TEXT NOT NULL, subject TEXT NOT NULL, status TEXT NOT NULL,
          created_at ${t.timestamp} NOT NULL, updated_at ${t.timestamp} NOT NULL, revision INTEGER NOT NULL DEFAULT 1)`).execute(db)
        await sql.raw(`CREATE TABLE ticket_notes (ticket_id ${t.ref} NOT NULL REFERENCES tickets (id), position INTEGER NOT NULL, text TEXT NOT NULL,
          PRIMARY KEY (ticket_id, position))`).execute(db)
      },
    }),
  },
  repository: (db, dialect) => new OwnedRows<Ticket, { status?: string }>(db, dialect, { table: 'tickets', children: { table: 'ticket_notes', key: 'ticket_id', as: 'notes' } }),
}

async function open (kind: StoreKind, url: string, modules: readonly StoreModule[]): Promise<KyselyStore> {
  return kind === 'sqlite' ? openSqliteStore(url.slice('sqlite:'.length), { modules }) : openPostgresStore(url, { poolMax: 2, modules })
}

const alice = { subject: 'alice', scopes: new Set<string>(), kind: 'jwt' as const }
const bob = { subject: 'bob', scopes: new Set<string>(), kind: 'jwt' as const }
const admin = { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const }

for (const kind of await storeKinds()) {
  describe(`a resource's store module [${kind}]`, () => {
    it('migrates with the core, and its repository serves on the store and in units of work', async () => {
      const db = await freshDatabase(kind)
      const store = await open(kind, db.url, [...STORE_MODULES, ticketsStore])
      try {
        await store.migrate()
        const tickets = (store as unknown as Record<string, OwnedRows<Ticket, { status?: string }>>).tickets!
        const made = await store.transaction(async uow => {
          const repo = (uow as unknown as Record<string, OwnedRows<Ticket>>).tickets!
          return await repo.insert('alice', 'OPEN', { subject: 'printer' }, [{ text: 'jammed' }, { text: 'again' }], new Date())
        })
        assert.deepEqual({ subject: made.subject, status: made.status, owner: made.owner, notes: made.notes, revision: made.revision }, { subject: 'printer', status: 'OPEN', owner: 'alice', notes: [{ text: 'jammed' }, { text: 'again' }], revision: 1 })
        assert.deepEqual((await tickets.find(made.id, alice))?.notes, [{ text: 'jammed' }, { text: 'again' }])
        assert.equal(await tickets.find(made.id, bob), null, 'another owner does not see it')
        assert.equal((await tickets.find(made.id, admin))?.id, made.id, 'an admin does')

        // A failure after the row was written leaves neither it nor its children behind.
        await assert.rejects(store.transaction(async uow => {
          await (uow as unknown as Record<string, OwnedRows<Ticket>>).tickets!.insert('alice', 'OPEN', { subject: 'lost' }, [{ text: 'x' }], new Date())
          throw new Error('boom')
        }), /boom/)
        const page = await tickets.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 10, count: true }, admin, true)
        assert.deepEqual(page.items.map(t => t.subject), ['printer'])
        assert.equal(page.total, 1)

        // A move is a compare-and-set on the status.
        assert.equal((await tickets.move(made.id, alice, ['OPEN'], 'CLOSED', new Date())).outcome, 'done')
        assert.equal((await tickets.move(made.id, alice, ['OPEN'], 'CLOSED', new Date())).outcome, 'stale')
        assert.equal((await tickets.move(made.id, bob, ['CLOSED'], 'OPEN', new Date())).outcome, 'missing')
        assert.deepEqual((await tickets.list({ filter: { status: 'CLOSED' }, sort: [{ key: 'id', direction: 'asc' }], limit: 10 }, alice)).items.map(t => [t.status, t.revision]), [['CLOSED', 2]])
      } finally {
        await store.close()
        await db.drop()
      }
    })

    it('refuses two migrations of one name', async () => {
      const db = await freshDatabase(kind)
      const clash: StoreModule = { ...ticketsStore, name: 'clash', migrations: { '0003-orders': ticketsStore.migrations['tickets/0001-tickets']! } }
      const store = await open(kind, db.url, [...STORE_MODULES, clash])
      try {
        await assert.rejects(store.migrate(), /two migrations are named 0003-orders/)
      } finally {
        await store.close()
        await db.drop()
      }
    })
  })
}

describe('problem codes a resource declares', () => {
  it('may not take a code already in the catalogue', () => {
    const text = { title: 't', detail: 'd' }
    const problems = { POST_NOT_FOUND: { status: 404, ...text, translations: { de: text, fr: text, es: text } } }
    assert.throws(() => buildCatalogue([{ name: 'a', problems }, { name: 'b', problems }]), /POST_NOT_FOUND is defined twice \(again by b\)/)
    assert.throws(() => buildCatalogue([{ name: 'a', problems: { NOT_FOUND: problems.POST_NOT_FOUND } }]), /defined twice/)
    assert.throws(() => buildCatalogue([{ name: 'a', fieldCodes: { BLANK: 'x' } }]), /field code BLANK is defined twice/)
  })
})
