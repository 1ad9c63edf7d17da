import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Migrator, sql } from 'kysely'
import { loadConfig, openStore } from '../../../../src/context.ts'
import type { KyselyStore } from '../../../../src/store/kysely-store.ts'
import { migratorProps } from '../../../../src/store/migrations/plan.ts'
import { buildTestApp, freshDatabase, json, storeKinds, type TestApp } from '../../../helper.ts'
import { before } from '../../../support/hooks.ts'

const CONTENT_MIGRATION = 'posts/0001-content'

/**
 * A database migrated up to the migration before `next`, with rows written by `write` the way that
 * schema took them, then started by the service (which migrates it the rest of the way).
 */
function startedAfterWriting (kind: 'sqlite' | 'postgres', next: string, write: (store: KyselyStore) => Promise<void>) {
  const s = {} as { db: Awaited<ReturnType<typeof freshDatabase>>, t: TestApp }
  before(async () => {
    s.db = await freshDatabase(kind)
    const store = await openStore(loadConfig({ DATABASE_URL: s.db.url, DATA_DIR: s.db.dataDir })) as KyselyStore
    const plan = store.migrationPlan()
    const result = await new Migrator({ db: store.db, ...migratorProps(plan) }).migrateTo(plan.order[plan.order.indexOf(next) - 1]!)
    assert.equal(result.error, undefined)
    await write(store)
    await store.close()
    s.t = await buildTestApp(kind, {}, { url: () => s.db.url })
  })
  after(async () => {
    await s.t.close()
    await s.db.drop()
  })
  return s
}

for (const kind of await storeKinds()) {
  describe(`migrating a database made before slugs and tags [${kind}]`, () => {
    // The schema as it was before this migration, with posts written into it the way that schema took them.
    const s = startedAfterWriting(kind, CONTENT_MIGRATION, async store => {
      const rows: [string, string, string, string][] = [
        ['Crème brûlée!', '# Hello\n\n<script>x</script> *world*', 'published', '2026-01-01T00:00:00.000Z'],
        ['Crème Brûlée', 'second', 'draft', '2026-01-02T00:00:00.000Z'],
        ['creme brulee', 'third', 'published', '2026-01-03T00:00:00.000Z'],
        ['!!!', 'word '.repeat(100), 'archived', '2026-01-04T00:00:00.000Z'],
      ]
      for (const [title, content, status, at] of rows) {
        const ts = kind === 'postgres' ? sql`${at}::timestamptz` : sql`${at}`
        await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision) VALUES (${title}, ${content}, ${status}, 'alice', ${ts}, ${ts}, 1)`.execute(store.db)
      }
    })

    it('gives every post a unique derived slug, empty tags, an excerpt and HTML; published_at = created_at when published', async () => {
      const admin = await s.t.auth('root', ['admin'])
      const posts = json(await s.t.request({ method: 'GET', url: '/posts?sort=id&fields=id,slug,tags,excerpt,content_html,published_at,created_at,status', headers: admin }))
      assert.deepEqual(posts.map((p: { slug: string }) => p.slug), ['creme-brulee', 'creme-brulee-2', 'creme-brulee-3', 'post'])
      for (const p of posts) assert.deepEqual(p.tags, [])
      assert.equal(posts[0].excerpt, 'Hello <script>x</script> world')
      assert.equal(posts[0].content_html, '<h1>Hello</h1>\n<p>&lt;script&gt;x&lt;/script&gt; <em>world</em></p>\n')
      assert.ok(posts[3].excerpt.endsWith('word…'))
      assert.equal(posts[0].published_at, '2026-01-01T00:00:00.000Z')
      assert.equal(posts[1].published_at, null)
      assert.equal(posts[2].published_at, posts[2].created_at)
      assert.equal(posts[3].published_at, null)
    })

    it('serves the migrated posts by slug, searches them, and takes new posts beside them', async () => {
      assert.equal(json(await s.t.request({ method: 'GET', url: '/posts/by-slug/creme-brulee-3' })).title, 'creme brulee')
      assert.equal(json(await s.t.request({ method: 'GET', url: '/posts?q=hello' })).length, 1)
      const alice = await s.t.auth('alice', ['posts:write'])
      const created = json(await s.t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Crème brûlée', content: '', tags: ['Food'] } }))
      assert.equal(created.slug, 'creme-brulee-4')
      await s.t.searchIndexed()
      assert.equal(json(await s.t.request({ method: 'GET', url: '/posts?q=food' })).length, 1, 'search covers tags after the migration')
    })
  })
}

for (const kind of await storeKinds()) {
  describe(`migrating a database made before tags kept their posts' order (posts/0003-tag-order) [${kind}]`, () => {
    // Tagged posts as that schema held them: post_tags without an order. Created out of id order.
    const s = startedAfterWriting(kind, 'posts/0003-tag-order', async store => {
      const at = ['2026-01-03T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-04T00:00:00.000Z', '2026-01-02T00:00:00.000Z']
      for (const [i, created] of at.entries()) {
        const ts = kind === 'postgres' ? sql`${created}::timestamptz` : sql`${created}`
        await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug, tags, excerpt, content_html, published_at)
          VALUES (${`Post ${i}`}, '', 'published', 'alice', ${ts}, ${ts}, 1, ${`post-${i}`}, '["Kept"]', '', '', ${ts})`.execute(store.db)
        await sql`INSERT INTO post_tags (post_id, tag_key, name) VALUES (${i + 1}, 'kept', 'Kept')`.execute(store.db)
      }
    })

    it('lists a tag of posts written before it in created_at order, both ways, as the whole list does', async () => {
      const ids = async (query: string) => (json(await s.t.request({ method: 'GET', url: `/posts?${query}` })) as { id: number }[]).map(p => p.id)
      assert.deepEqual(await ids('tag=kept'), [3, 1, 4, 2])
      assert.deepEqual(await ids('tag=kept&sort=created_at'), [2, 4, 1, 3])
      assert.deepEqual(await ids('tag=kept'), await ids(''))
    })
  })
}

for (const kind of await storeKinds()) {
  describe(`migrating a database made before posts had people as authors (posts/0009-authors) [${kind}]`, () => {
    const s = startedAfterWriting(kind, 'posts/0009-authors', async store => {
      const rows: [string, string, string][] = [['One', 'Ada Lovelace', 'ada-1'], ['Two', 'Ada Lovelace', 'ada-2'], ['Three', 'cli-admin', 'three'], ['Four', 'Ada-Lovelace', 'four']]
      for (const [title, author, slug] of rows) {
        const at = '2026-01-01T00:00:00.000Z'
        const ts = kind === 'postgres' ? sql`${at}::timestamptz` : sql`${at}`
        await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug, published_at) VALUES (${title}, '', 'published', ${author}, ${ts}, ${ts}, 1, ${slug}, ${ts})`.execute(store.db)
      }
    })

    it('makes each author name an inactive user with a slug of its own, the author of its posts, with an author page', async () => {
      const posts = json(await s.t.request({ method: 'GET', url: '/posts?sort=id&fields=title,author,authors' }))
      assert.deepEqual(posts.map((p: { author: string, authors: string[] }) => [p.author, p.authors]), [
        ['Ada Lovelace', ['ada-lovelace']], ['Ada Lovelace', ['ada-lovelace']], ['cli-admin', ['cli-admin']], ['Ada-Lovelace', ['ada-lovelace-2']],
      ])
      const authors = json(await s.t.request({ method: 'GET', url: '/authors' }))
      assert.deepEqual(authors.map((a: { name: string, slug: string, post_count: number }) => [a.name, a.slug, a.post_count]), [
        ['Ada Lovelace', 'ada-lovelace', 2], ['Ada-Lovelace', 'ada-lovelace-2', 1], ['cli-admin', 'cli-admin', 1],
      ])
      const users = json(await s.t.request({ method: 'GET', url: '/users?status=inactive', headers: await s.t.auth('root', ['admin']) }))
      assert.equal(users.length, 3)
      assert.ok(users.every((u: { status: string }) => u.status === 'inactive'))
      assert.equal(json(await s.t.request({ method: 'GET', url: '/posts?author=ada-lovelace' })).length, 2)
    })
  })
  describe(`migrating a database whose posts hold the site's words as slugs (posts/0010-site-words) [${kind}]`, () => {
    const s = startedAfterWriting(kind, 'posts/0010-site-words', async store => {
      for (const [title, slug] of [['Page', 'page'], ['Page two', 'page-2'], ['Tags', 'tag'], ['Hello', 'hello']]) {
        const at = '2026-01-01T00:00:00.000Z'
        const ts = kind === 'postgres' ? sql`${at}::timestamptz` : sql`${at}`
        const { rows } = await sql<{ id: number }>`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug, published_at) VALUES (${title}, '', 'published', 'ada', ${ts}, ${ts}, 1, ${slug}, ${ts}) RETURNING id`.execute(store.db)
        await sql`INSERT INTO post_slugs (slug, post_id) VALUES (${slug}, ${rows[0]!.id})`.execute(store.db)
      }
    })

    it('gives each such post the first free numbered slug, and its old slug leads to the new one', async () => {
      const posts = json(await s.t.request({ method: 'GET', url: '/posts?sort=id&fields=title,slug' }))
      assert.deepEqual(posts.map((p: { slug: string }) => p.slug), ['page-3', 'page-2', 'tag-2', 'hello'])
      const moved = await s.t.request({ method: 'GET', url: '/posts/by-slug/page' })
      assert.equal(moved.statusCode, 301)
      assert.match(String(moved.headers.location), /\/posts\/by-slug\/page-3$/)
    })
  })
}
