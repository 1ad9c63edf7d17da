import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { type CompiledQuery, type LogEvent, sql } from 'kysely'
import { STORE_MODULES } from '../../../src/context.ts'
import { KyselyStore } from '../../../src/store/kysely-store.ts'
import { openPostgresStore } from '../../../src/store/postgres/postgres-store.ts'
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.ts'
import { buildTestApp, freshDatabase, json, storeKinds, type TestApp } from '../../helper.ts'
import { createPost } from '../../support/posts.ts'
import { before } from '../../support/hooks.ts'

type Headers = Record<string, string>

/** Many posts with one title: how many slugs of it are taken before the creates under test. */
const TAKEN = 3000

for (const kind of await storeKinds()) {
  describe(`derived slugs of a title many posts share [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    let db: KyselyStore['db']
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['posts:write'])
      assert.ok(t.store instanceof KyselyStore)
      db = t.store.db
    })

    const create = async (body: object) => {
      const res = await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { content: '', ...body } })
      assert.equal(res.statusCode, 201, res.body)
      return json<{ id: number, slug: string }>(res)
    }
    const remove = async (id: number) => {
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: alice })).statusCode, 204)
    }
    const counter = async (base: string) => (await db.selectFrom('post_slug_counters').select('next_n').where('base', '=', base).executeTakeFirst())?.next_n

    it('numbers them base, base-2, base-3 … in order, one after another', async () => {
      const slugs: string[] = []
      for (let i = 0; i < 120; i++) slugs.push((await create({ title: 'Weekly notes' })).slug)
      assert.deepEqual(slugs, ['weekly-notes', ...Array.from({ length: 119 }, (_, i) => `weekly-notes-${i + 2}`)])
      assert.equal(Number(await counter('weekly-notes')), 121, 'the next number is kept, not searched for')
    })

    it(`finds the next number after ${TAKEN} taken ones, and keeps it without reading them again`, async () => {
      // TAKEN slugs of one title, held as old slugs (aliases) of one post: taken all the same.
      const holder = await create({ title: 'Holder', slug: 'bulk-title' })
      if (kind === 'sqlite') {
        await sql`WITH RECURSIVE seq(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM seq WHERE i < ${TAKEN})
          INSERT INTO post_slugs (slug, post_id) SELECT 'bulk-title-' || i, ${holder.id} FROM seq`.execute(db)
      } else {
        await sql`INSERT INTO post_slugs (slug, post_id) SELECT 'bulk-title-' || i, ${holder.id} FROM generate_series(2, ${TAKEN}) AS i`.execute(db)
      }
      assert.equal((await create({ title: 'Bulk title' })).slug, `bulk-title-${TAKEN + 1}`)
      // The taken slugs are not read again: one that appears below the counter now is not seen.
      await db.deleteFrom('post_slugs').where('slug', '=', 'bulk-title-7').execute()
      assert.equal((await create({ title: 'Bulk  title!' })).slug, `bulk-title-${TAKEN + 2}`)
      assert.equal(Number(await counter('bulk-title')), TAKEN + 3)
    })

    it('gives the numbers a deletion freed first, least first, then goes on from the counter', async () => {
      const posts = []
      for (let i = 0; i < 6; i++) posts.push(await create({ title: 'Gap title' }))
      assert.deepEqual(posts.map(p => p.slug), ['gap-title', 'gap-title-2', 'gap-title-3', 'gap-title-4', 'gap-title-5', 'gap-title-6'])
      await remove(posts[4]!.id)
      await remove(posts[2]!.id)
      await remove(posts[0]!.id)
      const again = []
      for (let i = 0; i < 4; i++) again.push((await create({ title: 'Gap title' })).slug)
      assert.deepEqual(again, ['gap-title', 'gap-title-3', 'gap-title-5', 'gap-title-7'])
    })

    it('frees the old slugs of a deleted post too, and skips a freed number a client took meanwhile', async () => {
      const posts = []
      for (let i = 0; i < 4; i++) posts.push(await create({ title: 'Renamed title' }))
      const moved = await t.request({ method: 'PATCH', url: `/posts/${posts[1]!.id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ slug: 'elsewhere' }) })
      assert.equal(json(moved).slug, 'elsewhere')
      assert.equal((await create({ title: 'Renamed title' })).slug, 'renamed-title-5', 'an old slug stays taken')
      await remove(posts[1]!.id)
      await remove(posts[2]!.id)
      // renamed-title-2 (an old slug) and renamed-title-3 are free; a client takes the first.
      assert.equal((await create({ title: 'x', slug: 'renamed-title-2' })).slug, 'renamed-title-2')
      assert.deepEqual([(await create({ title: 'Renamed title' })).slug, (await create({ title: 'Renamed title' })).slug], ['renamed-title-3', 'renamed-title-6'])
    })

    it('skips a number a client gave ahead of the counter', async () => {
      assert.deepEqual([(await create({ title: 'Given ahead' })).slug, (await create({ title: 'Given ahead' })).slug], ['given-ahead', 'given-ahead-2'])
      assert.equal((await create({ title: 'x', slug: 'given-ahead-3' })).slug, 'given-ahead-3')
      assert.equal((await create({ title: 'Given ahead' })).slug, 'given-ahead-4')
    })

    it('keeps a long title\'s numbered slugs within 100 characters, and reuses one a deletion freed', async () => {
      const title = `${'word '.repeat(30)}end`
      const base = `${'word-'.repeat(19)}word`
      const posts = []
      for (let i = 0; i < 3; i++) posts.push(await create({ title }))
      const cut = `${'word-'.repeat(19)}wor`
      assert.deepEqual(posts.map(p => p.slug), [base, `${cut}-2`, `${cut}-3`])
      await remove(posts[1]!.id)
      assert.deepEqual([(await create({ title })).slug, (await create({ title })).slug], [`${cut}-2`, `${cut}-4`])
    })

    it('gives concurrent creates of one title distinct numbers, none skipped', async () => {
      await create({ title: 'Together' })
      await create({ title: 'Together' })
      const slugs = await Promise.all(Array.from({ length: 10 }, async () => (await create({ title: 'Together' })).slug))
      assert.deepEqual(slugs.sort(), Array.from({ length: 10 }, (_, i) => `together-${i + 3}`).sort())
    })
  })

  describe(`the statements a derived slug costs [${kind}]`, () => {
    let fresh: Awaited<ReturnType<typeof freshDatabase>>
    let probe: KyselyStore
    const seen: CompiledQuery[] = []
    before(async () => {
      fresh = await freshDatabase(kind)
      // A store that records every statement it sends, with nothing else writing beside it.
      const log = (event: LogEvent) => { seen.push(event.query) }
      probe = kind === 'sqlite'
        ? openSqliteStore(fresh.url.slice('sqlite:'.length), { log, modules: STORE_MODULES })
        : openPostgresStore(fresh.url, { poolMax: 1, log, modules: STORE_MODULES })
      await probe.migrate()
    })
    after(async () => {
      await probe.close()
      await fresh.drop()
    })

    it('are the same for the 3rd post of a title and the 300th', async () => {
      const statements: string[][] = []
      for (let i = 1; i <= 300; i++) {
        seen.length = 0
        await probe.transaction(async uow => await createPost(uow, { title: 'Same again' }))
        statements.push(seen.map(q => q.sql))
      }
      assert.equal(statements.length, 300)
      assert.deepEqual(statements[299], statements[2])
      // A look-up of the plain slug is one key; the slugs taken are a range of them.
      assert.ok(!statements[299]!.some(s => /select "slug" from "post_slugs"/.test(s)), 'no read of the slugs taken')
      assert.ok(statements[1]!.some(s => /select "slug" from "post_slugs"/.test(s)), 'the second (no counter yet) read them once')
    })
  })
}
