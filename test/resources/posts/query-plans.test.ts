import assert from 'node:assert/strict'
import { after, afterEach, describe, it } from 'node:test'
import { CompiledQuery, type LogEvent, sql } from 'kysely'
import type { PostSortKey } from '../../../src/resources/posts/post.ts'
import { KyselyStore } from '../../../src/store/kysely-store.ts'
import { postSortValue } from '../../../src/resources/posts/posts-repository.ts'
import { openPostgresStore } from '../../../src/store/postgres/postgres-store.ts'
import { STORE_MODULES } from '../../../src/context.ts'
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.ts'
import type { PostFilter } from '../../../src/resources/posts/store.ts'
import type { Viewer } from '../../../src/domain/principal.ts'
import type { ListQuery, SortDirection } from '../../../src/store/store.ts'
import { storeKinds } from '../../helper.ts'
import { type FreshStore, freshStore } from '../../support/store.ts'
import { before, beforeEach } from '../../support/hooks.ts'

const ROWS = 20_000

/** A store on the same database that records every statement it sends, with its parameters. */
async function probeStore (kind: string, url: string): Promise<{ store: KyselyStore, seen: CompiledQuery[] }> {
  const seen: CompiledQuery[] = []
  const log = (event: LogEvent) => { seen.push(event.query) }
  const store = kind === 'sqlite' ? openSqliteStore(url.slice('sqlite:'.length), { log, modules: STORE_MODULES }) : openPostgresStore(url, { poolMax: 1, log, modules: STORE_MODULES })
  return { store, seen }
}

type Probe = Awaited<ReturnType<typeof probeStore>>

/**
 * A suite's stores: a fresh one that `seed` fills, and a probe on the same database that records
 * what it sends; made before the suite's tests and closed after them.
 */
function suiteStores (kind: Parameters<typeof freshStore>[0], seed: (store: KyselyStore) => Promise<void>): { store: KyselyStore, probe: Probe } {
  let f: FreshStore
  const stores = {} as { store: KyselyStore, probe: Probe }
  before(async () => {
    f = await freshStore(kind)
    assert.ok(f.store instanceof KyselyStore)
    stores.store = f.store
    await seed(f.store)
    stores.probe = await probeStore(kind, f.url)
  })
  after(async () => {
    await stores.probe.store.close()
  })
  return stores
}

/** The SQL and parameters `list()` (and `listSummaries()`, the list route's default) send for this query. */
async function listQueries (probe: { store: KyselyStore, seen: CompiledQuery[] }, query: ListQuery<PostSortKey, PostFilter>): Promise<CompiledQuery[]> {
  const queries: CompiledQuery[] = []
  for (const read of [() => probe.store.posts.list(query, null), () => probe.store.posts.listSummaries(query, null)]) {
    probe.seen.length = 0
    await read()
    assert.equal(probe.seen.length, 1)
    queries.push(probe.seen[0]!)
  }
  return queries
}

/** Rows enough that a planner working from statistics prefers an index to a scan and sort. */
async function seed (store: KyselyStore): Promise<void> {
  if (store.kind === 'sqlite') {
    await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${ROWS})
      SELECT 'title ' || (i * 7919 % ${ROWS}), 'content ' || i,
        CASE WHEN i % 50 = 0 THEN 'archived' WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END,
        'author' || (i % 37),
        strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + i * 60, 'unixepoch'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + (i * 104729 % ${ROWS}) * 60, 'unixepoch'),
        1
      FROM s`.execute(store.db)
    await content(store)
    await sql`ANALYZE`.execute(store.db)
  } else {
    await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      SELECT 'title ' || (i * 7919 % ${ROWS}), 'content ' || i,
        CASE WHEN i % 50 = 0 THEN 'archived' WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END,
        'author' || (i % 37),
        to_timestamp(1700000000 + i * 60), to_timestamp(1700000000 + (i * 104729 % ${ROWS}) * 60), 1
      FROM generate_series(1, ${ROWS}) AS s(i)`.execute(store.db)
    await content(store)
    await sql`ANALYZE posts`.execute(store.db)
    await sql`ANALYZE post_tags`.execute(store.db)
  }
}

/** What the content migration gives posts: a slug each, published_at for the published, one of ten tags. */
async function content (store: KyselyStore): Promise<void> {
  await sql`UPDATE posts SET slug = 'post-' || id, published_at = CASE WHEN status = 'published' THEN created_at END`.execute(store.db)
  await sql`INSERT INTO post_slugs (slug, post_id) SELECT slug, id FROM posts`.execute(store.db)
  await sql`INSERT INTO post_tags (post_id, tag_key, name, created_at) SELECT id, 'tag-' || (id % 10), 'Tag-' || (id % 10), created_at FROM posts`.execute(store.db)
}

interface PgPlan { 'Node Type': string, 'Index Name'?: string, Plans?: PgPlan[] }

function pgNodes (plan: PgPlan): PgPlan[] {
  return [plan, ...(plan.Plans ?? []).flatMap(pgNodes)]
}

/** The plan of a statement, a line per step: SQLite's EXPLAIN QUERY PLAN, or PostgreSQL's nodes (type, and index if any). */
async function planLines (store: KyselyStore, q: CompiledQuery): Promise<string[]> {
  if (store.kind === 'sqlite') {
    return (await store.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${q.sql}`, [...q.parameters]))).rows.map(r => r.detail)
  }
  return pgNodes((await store.db.executeQuery<{ 'QUERY PLAN': [{ Plan: PgPlan }] }>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${q.sql}`, [...q.parameters]))).rows[0]!['QUERY PLAN'][0].Plan)
    .map(n => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`)
}

/** What the plan shows, as lines to assert on and to print when an assertion fails. */
async function explain (store: KyselyStore, q: CompiledQuery, byId: boolean): Promise<{ lines: string[], usesIndex: boolean, sorts: boolean }> {
  const lines = await planLines(store, q)
  if (store.kind === 'sqlite') {
    return {
      lines,
      // A rowid table is itself the B-tree of its INTEGER PRIMARY KEY: "SCAN posts" alone reads it
      // in id order, which is an index scan in all but name.
      usesIndex: lines.some(l => /^(SEARCH|SCAN) posts USING (COVERING )?INDEX posts_|USING INTEGER PRIMARY KEY/.test(l) || (byId && l === 'SCAN posts')),
      sorts: lines.some(l => l.includes('TEMP B-TREE')),
    }
  }
  return {
    lines,
    usesIndex: lines.some(l => /^Index (Only )?Scan on posts_/.test(l)),
    sorts: lines.some(l => /^(Sort|Incremental Sort|Seq Scan)\b/.test(l)),
  }
}

for (const kind of await storeKinds()) {
  describe(`query plans of the anonymous list [${kind}]`, () => {
    const s = suiteStores(kind, seed)

    for (const key of ['id', 'title', 'created_at', 'updated_at'] as const) {
      for (const direction of ['asc', 'desc'] as SortDirection[]) {
        it(`reads a keyset page by ${key} ${direction} from an index, without sorting`, async () => {
          const sort = key === 'id' ? [{ key, direction }] : [{ key, direction }, { key: 'id' as const, direction }]
          const first = await s.store.posts.list({ filter: {}, sort, limit: 20 }, null)
          assert.equal(first.items.length, 20)
          const last = first.items.at(-1)!
          const position = sort.map(t => ({ id: last.id, title: last.title, created_at: last.createdAt, updated_at: last.updatedAt })[t.key])
          for (const [name, query] of [
            ['first page', { filter: {}, sort, limit: 20 }],
            ['next page', { filter: {}, sort, limit: 20, after: position }],
            ['previous page', { filter: {}, sort, limit: 20, before: position }],
          ] as const) {
            for (const q of await listQueries(s.probe, query)) {
              const plan = await explain(s.store, q, key === 'id')
              if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} ${key} ${direction} ${name}: ${plan.lines.join(' / ')}\n`)
              assert.ok(plan.usesIndex, `${name}: no index in the plan:\n${plan.lines.join('\n')}`)
              assert.ok(!plan.sorts, `${name}: the plan sorts or scans the table:\n${plan.lines.join('\n')}`)
            }
          }
        })
      }
    }

    // The new sort keys page at constant cost, and ?tag= is an index lookup, not a scan.
    for (const key of ['published_at', 'slug'] as const) {
      for (const direction of ['asc', 'desc'] as SortDirection[]) {
        it(`reads a keyset page by ${key} ${direction} from an index, without sorting`, async () => {
          const sort = [{ key, direction }, { key: 'id' as const, direction }]
          const first = await s.store.posts.list({ filter: {}, sort, limit: 20 }, null)
          const last = first.items.at(-1)!
          const position = sort.map(t => postSortValue(last, t.key, t.direction))
          for (const [name, query] of [
            ['first page', { filter: {}, sort, limit: 20 }],
            ['next page', { filter: {}, sort, limit: 20, after: position }],
            ['tag filter, next page', { filter: { tag: ['tag-3'] }, sort, limit: 20, after: position }],
          ] as const) {
            for (const q of await listQueries(s.probe, query)) {
              const plan = await explain(s.store, q, false)
              if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} ${key} ${direction} ${name}: ${plan.lines.join(' / ')}\n`)
              assert.ok(plan.usesIndex, `${name}: no index in the plan:\n${plan.lines.join('\n')}`)
              assert.ok(!plan.sorts, `${name}: the plan sorts or scans the table:\n${plan.lines.join('\n')}`)
            }
          }
        })
      }
    }

    it('lists one tag in created_at order from its post_tags rows, in index order, both ways and from the middle', async () => {
      for (const direction of ['desc', 'asc'] as const) {
        for (const after of [undefined, ['2023-11-21T02:53:20.000Z', 10000] as [string, number]]) {
          for (const q of await listQueries(s.probe, { filter: { tag: ['tag-3'] }, sort: [{ key: 'created_at', direction }, { key: 'id', direction }], limit: 20, ...(after ? { after } : {}) })) {
            const plan = await explain(s.store, q, false)
            if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} one tag ${direction}: ${plan.lines.join(' / ')}\n`)
            assert.ok(plan.lines.some(l => /post_tags_key_created_at_idx/.test(l)), `the tag's rows are read from their index:\n${plan.lines.join('\n')}`)
            assert.ok(!plan.sorts, plan.lines.join('\n'))
          }
        }
      }
    })

    it('filters by tag through the post_tags index, in the order of the sort index', async () => {
      for (const q of await listQueries(s.probe, { filter: { tag: ['tag-3', 'tag-4'] }, sort: [{ key: 'created_at', direction: 'desc' }, { key: 'id', direction: 'desc' }], limit: 20 })) {
        const plan = await explain(s.store, q, false)
        if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} tag: ${plan.lines.join(' / ')}\n`)
        assert.ok(plan.usesIndex, plan.lines.join('\n'))
        assert.ok(!plan.sorts, plan.lines.join('\n'))
        assert.ok(plan.lines.some(l => /post_tags/.test(l)), `the tag is looked up in post_tags:\n${plan.lines.join('\n')}`)
      }
    })
  })
}

for (const kind of await storeKinds()) {
  describe(`query plans of the webhook sender's claim [${kind}]`, () => {
    const s = suiteStores(kind, async store => {
      // A long queue of first attempts for three subscriptions, a long history of delivered ones,
      // and a few retries waiting for later: none of it may be read by a claim that takes 20.
      const rows = (n: number) => kind === 'sqlite'
        ? sql`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n}) SELECT i FROM s`
        : sql`SELECT i FROM generate_series(1, ${n}) AS s(i)`
      const ts = kind === 'sqlite' ? sql`'2030-01-01T00:00:00.000Z'` : sql`'2030-01-01T00:00:00Z'::timestamptz`
      const later = kind === 'sqlite' ? sql`'2031-01-01T00:00:00.000Z'` : sql`'2031-01-01T00:00:00Z'::timestamptz`
      await sql`INSERT INTO webhook_deliveries (id, webhook_id, event_id, url, payload, state, attempts, next_attempt_at, created_at, updated_at)
        SELECT 'q' || i, 1 + i % 3, i, 'https://example.com/h', '{}', 'pending', 0, ${ts}, ${ts}, ${ts} FROM (${rows(ROWS)}) AS r`.execute(store.db)
      await sql`INSERT INTO webhook_deliveries (id, webhook_id, event_id, url, payload, state, attempts, next_attempt_at, created_at, updated_at)
        SELECT 'd' || i, 1 + i % 3, i, 'https://example.com/h', '{}', 'delivered', 1, ${ts}, ${ts}, ${ts} FROM (${rows(ROWS)}) AS r`.execute(store.db)
      await sql`INSERT INTO webhook_deliveries (id, webhook_id, event_id, url, payload, state, attempts, next_attempt_at, created_at, updated_at)
        SELECT 'r' || i, 1 + i % 3, i, 'https://example.com/h', '{}', 'pending', 2, ${later}, ${ts}, ${ts} FROM (${rows(ROWS / 10)}) AS r`.execute(store.db)
      await sql`${sql.raw(kind === 'sqlite' ? 'ANALYZE' : 'ANALYZE webhook_deliveries')}`.execute(store.db)
    })

    it('reads each queue from its partial index, never scanning or sorting the table', async () => {
      s.probe.seen.length = 0
      const claimed = await s.probe.store.transaction(async uow => await uow.webhooks.claimDue(new Date(Date.UTC(2030, 0, 2)), 60_000, 20))
      assert.equal(claimed.length, 20)
      const reads = s.probe.seen.filter(q => /^\s*(select|with)/i.test(q.sql))
      assert.ok(reads.length >= 3, `the free queue, the subscriptions with a queue, their heads: ${reads.map(q => q.sql).join('\n')}`)
      for (const q of reads) {
        const lines = await planLines(s.store, q)
        if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} claim: ${q.sql.replace(/\s+/g, ' ').slice(0, 80)}: ${lines.join(' / ')}\n`)
        assert.ok(lines.some(l => /webhook_deliveries_(first|free)_idx/.test(l)), `a queue's index:\n${lines.join('\n')}`)
        assert.ok(!lines.some(l => /^SCAN webhook_deliveries$|TEMP B-TREE|^Seq Scan|^Sort|webhook_deliveries_due_idx/.test(l)), `no scan or sort of the table:\n${lines.join('\n')}`)
      }
    })
  })
}

/** The indexes on posts, as the schema holds them (the primary key aside). */
async function postIndexes (store: KyselyStore): Promise<string[]> {
  const { rows } = store.kind === 'sqlite'
    ? await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'posts' AND name NOT LIKE 'sqlite_autoindex%'`.execute(store.db)
    : await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'posts' AND indexname <> 'posts_pkey'`.execute(store.db)
  return rows.map(r => r.name).sort()
}

const VIEWERS = {
  anonymous: null,
  author: { subject: 'author3', scopes: new Set<string>(), kind: 'jwt' as const },
  admin: { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const },
}

const SORT_KEYS = ['id', 'title', 'created_at', 'updated_at', 'published_at', 'slug'] as const

/** Every filter alone, with values that match some posts of the seed (q on its own below). */
const FILTERS: Record<string, PostFilter> = {
  none: {},
  'status=draft': { status: 'draft' },
  'status=published': { status: 'published' },
  author: { author: 'author5' },
  slug: { slug: 'post-77' },
  'one tag': { tag: ['tag-3'] },
  'two tags': { tag: ['tag-3', 'tag-4'] },
  // The middle of the seed's times: half the posts on either side.
  published_after: { published_after: '2023-11-21T00:00:00.000Z' },
  published_before: { published_before: '2023-11-21T00:00:00.000Z' },
  updated_since: { updated_since: '2023-11-21T00:00:00.000Z' },
}

for (const kind of await storeKinds()) {
  describe(`query plans of every list shape the API makes [${kind}]`, () => {
    const s = suiteStores(kind, seed)
    const used = new Set<string>()

    /** Asserts the plans of `query`'s statements (list, summaries, count) read an index and never sort; notes the indexes. */
    async function indexedWithoutSort (name: string, query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer, sorts = false): Promise<void> {
      const statements: CompiledQuery[] = []
      for (const read of [() => s.probe.store.posts.list(query, viewer), () => s.probe.store.posts.listSummaries(query, viewer)]) {
        s.probe.seen.length = 0
        await read()
        statements.push(...s.probe.seen)
      }
      // A count reads every matching row whatever the plan: only the pages' plans are asserted.
      for (const q of statements.filter(q => !/count\(\*\)/i.test(q.sql))) {
        const lines = await planLines(s.store, q)
        if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} ${name}: ${lines.join(' / ')}\n`)
        for (const l of lines) for (const m of l.matchAll(/\b(posts_[a-z_]+(?:idx|fts))\b/g)) used.add(m[1]!)
        const plan = await explain(s.store, q, true)
        const indexed = plan.usesIndex || lines.some(l => /post_tags|posts_fts|posts_search_idx|^Bitmap Index Scan on posts_/.test(l))
        if (!indexed) failures.push(`${name}: no index in the plan: ${lines.join(' / ')}`)
        // PostgreSQL's planner weighs a sort of a range against an index walk by its statistics
        // (and sorts a unique key's index by id incrementally): there only the index is asserted.
        if (!sorts && kind === 'sqlite' && plan.sorts) failures.push(`${name}: the plan sorts or scans the table: ${lines.join(' / ')}`)
      }
    }
    const failures: string[] = []
    beforeEach(() => { failures.length = 0 })
    afterEach(() => { assert.deepEqual(failures, [], failures.join('\n')) })

    for (const [who, viewer] of Object.entries(VIEWERS)) {
      it(`pages every sort key both ways for the ${who} viewer from an index`, async () => {
        for (const key of SORT_KEYS) {
          for (const direction of ['asc', 'desc'] as const) {
            const sort = key === 'id' ? [{ key, direction }] : [{ key, direction }, { key: 'id' as const, direction }]
            const first = await s.store.posts.list({ filter: {}, sort, limit: 20 }, viewer)
            const position = sort.map(t => postSortValue(first.items.at(-1)!, t.key, t.direction))
            await indexedWithoutSort(`${who} ${key} ${direction} first`, { filter: {}, sort, limit: 20, count: true }, viewer)
            await indexedWithoutSort(`${who} ${key} ${direction} next`, { filter: {}, sort, limit: 20, after: position }, viewer)
            await indexedWithoutSort(`${who} ${key} ${direction} previous`, { filter: {}, sort, limit: 20, before: position }, viewer)
            await indexedWithoutSort(`${who} ${key} ${direction} page 3`, { filter: {}, sort, limit: 20, offset: 40 }, viewer)
          }
        }
      })

      it(`reads every filter for the ${who} viewer in the default order from an index`, async () => {
        const sort = [{ key: 'created_at' as const, direction: 'desc' as const }, { key: 'id' as const, direction: 'desc' as const }]
        for (const [name, filter] of Object.entries(FILTERS)) {
          // Drafts are nobody's but their authors' and admins': that list is empty by rule.
          if (who === 'anonymous' && filter.status === 'draft') continue
          // A range of another key than the order's is read from its index, then sorted: it costs
          // what the range holds. In the order of its own key, it is one index range.
          const range = /^(published|updated)_/.test(name)
          await indexedWithoutSort(`${who} ${name}`, { filter, sort, limit: 20, count: true }, viewer, range)
          if (range) {
            const key = name.startsWith('updated') ? 'updated_at' as const : 'published_at' as const
            for (const direction of ['asc', 'desc'] as const) {
              await indexedWithoutSort(`${who} ${name} by ${key} ${direction}`, { filter, sort: [{ key, direction }, { key: 'id', direction }], limit: 20 }, viewer)
            }
          }
        }
        // Full-text matches are found in the text index, then put in order: no index holds both.
        await indexedWithoutSort(`${who} q`, { filter: { q: '77' }, sort, limit: 20, count: true }, viewer, true)
      })
    }

    it('keeps no index on posts that no query uses', async () => {
      // Reads that are not lists: by slug, the scheduler's, a feature image's holders, the sitemap's.
      s.probe.seen.length = 0
      await s.probe.store.posts.findBySlug('post-5', null)
      await s.probe.store.posts.due(new Date(), 10)
      await s.probe.store.posts.nextDue()
      await s.probe.store.posts.holdsImage('AAAAAAAAAAAAAAAAAAAAAA')
      await s.probe.store.posts.published(100, 50)
      await s.probe.store.posts.publishedStats()
      await s.probe.store.posts.publishedIdAt(100)
      for (const q of [...s.probe.seen]) {
        const lines = await planLines(s.store, q)
        if (process.env.TEST_PLANS) process.stderr.write(`# ${kind} other read: ${lines.join(' / ')}\n`)
        for (const l of lines) for (const m of l.matchAll(/\b(posts_[a-z_]+(?:idx|fts))\b/g)) used.add(m[1]!)
      }
      // PostgreSQL's text index (GIN) is read when its planner expects few matches; on this seed
      // it walks the order's index and tests each row instead. It is what `q` needs all the same.
      const unused = (await postIndexes(s.store)).filter(i => !used.has(i) && i !== 'posts_search_idx')
      assert.deepEqual(unused, [], `indexes on posts that no query's plan reads (each one costs every write): ${unused.join(', ')}`)
    })
  })
}
