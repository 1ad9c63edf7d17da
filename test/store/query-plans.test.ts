import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CompiledQuery, type LogEvent, sql } from 'kysely'
import type { PostSortKey } from '../../src/resources/posts/post.ts'
import { KyselyStore } from '../../src/store/kysely-store.ts'
import { postSortValue } from '../../src/resources/posts/posts-repository.ts'
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts'
import { STORE_MODULES } from '../../src/context.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { PostFilter } from '../../src/resources/posts/store.ts'
import type { ListQuery, SortDirection } from '../../src/store/store.ts'
import { storeKinds } from '../helper.ts'
import { type FreshStore, freshStore } from './store-helper.ts'

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
    await f.close()
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
