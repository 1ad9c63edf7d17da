/**
 * Paging depth benchmark (`npm run bench:depth`): seeds ROWS posts (default 1 000 000), then times
 * page 1 and a page near the end, by cursor and by offset, for every sort key in both directions.
 * Target: a cursor page near the end costs at most 1.5× page 1.
 *
 *   npm run bench:depth                               # SQLite, 1 000 000 rows
 *   BENCH_ROWS=100000 npm run bench:depth             # fewer rows
 *   BENCH_STORE=postgres npm run bench:depth          # PostgreSQL at 127.0.0.1:5432 (a scratch database)
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { CursorCodec } from '../src/http/toolkit/paging.ts'
import type { KyselyStore } from '../src/store/kysely-store.ts'
import { createContext, loadConfig, openStore } from '../src/context.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000)
const KIND = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'
const RUNS = Number(process.env.BENCH_RUNS ?? 25)
const LIMIT = 20
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function databaseUrl (): Promise<{ url: string, fresh: boolean }> {
  if (KIND === 'sqlite') {
    const dir = path.join(os.tmpdir(), 'blog-bench')
    fs.mkdirSync(dir, { recursive: true })
    const file = path.join(dir, `depth-${ROWS}.db`)
    return { url: `sqlite:${file}`, fresh: !fs.existsSync(file) }
  }
  const name = `blog_bench_${ROWS}`
  const admin = new pg.Client({ connectionString: PG_ADMIN })
  await admin.connect()
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
  if (!exists) await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_ADMIN)
  url.pathname = `/${name}`
  return { url: url.toString(), fresh: !exists }
}

async function seed (store: KyselyStore, url: string): Promise<void> {
  const count = await store.db.selectFrom('posts').select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()
  if (Number(count.n) >= ROWS) return
  const started = performance.now()
  process.stdout.write(`seeding ${ROWS.toLocaleString('en')} posts into ${KIND}… `)
  // One set-based statement per database: ids, 1-second-apart creation times, random titles,
  // every tenth post a draft, updated_at scattered so its order differs from created_at's.
  if (KIND === 'sqlite') {
    await sql`
      WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${ROWS})
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      SELECT 'Post ' || lower(hex(randomblob(5))), 'Body of post number ' || i,
             CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'),
             strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + ((i * 7919) % ${ROWS}), 'unixepoch'), 1
      FROM seq`.execute(store.db)
    await sql`ANALYZE`.execute(store.db)
  } else {
    // A session of its own: the service's pool cancels statements after 15 s, seeding takes longer.
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query('SET statement_timeout = 0')
    await client.query(`
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      SELECT 'Post ' || left(md5(i::text), 10), 'Body of post number ' || i,
             CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             timestamptz '2020-01-01T00:00:00Z' + i * interval '1 second',
             timestamptz '2020-01-01T00:00:00Z' + ((i::bigint * 7919) % $1) * interval '1 second', 1
      FROM generate_series(1, $1) AS i`, [ROWS])
    await client.query('VACUUM ANALYZE posts')
    await client.end()
  }
  process.stdout.write(`${((performance.now() - started) / 1000).toFixed(1)} s\n`)
}

function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

async function main (): Promise<void> {
  const { url } = await databaseUrl()
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', AUTH_JWT_SECRET: 'bench-secret-bench-secret-bench-secret!', RATE_LIMIT_MAX: '0' })
  const store = await openStore(config) as KyselyStore
  await store.migrate()
  await seed(store, url)
  const app = await buildApp(await createContext(config, { store }))
  await app.ready()
  const cursors = new CursorCodec(await store.serverSecret())

  async function once (url: string): Promise<number> {
    const t0 = performance.now()
    const res = await app.inject({ method: 'GET', url })
    const dt = performance.now() - t0
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
    return dt
  }

  /** Medians of two requests timed alternately, so that load on the machine weighs on both alike. */
  async function timePair (a: string, b: string): Promise<[number, number]> {
    const as: number[] = []
    const bs: number[] = []
    for (let i = 0; i < RUNS + 3; i++) {
      const [ta, tb] = [await once(a), await once(b)]
      if (i >= 3) {
        as.push(ta)
        bs.push(tb)
      }
    }
    return [median(as), median(bs)]
  }

  const visible = Math.floor(ROWS * 0.9)
  const deep = visible - 2 * LIMIT
  const rows: string[] = []
  let worst = 0
  for (const key of ['id', 'title', 'created_at', 'updated_at']) {
    for (const dir of ['asc', 'desc'] as const) {
      const sort = `${dir === 'desc' ? '-' : ''}${key}`
      const first = `/posts?sort=${sort}&limit=${LIMIT}`
      // The row `deep` places in, read once (slowly) to forge the cursor a client would hold there.
      const column = sql.ref(key)
      const anchor = await sql<{ id: number, v: string | Date | number }>`
        SELECT id, ${column} AS v FROM posts WHERE status = 'published'
        ORDER BY ${column} ${sql.raw(dir)}, id ${sql.raw(dir)} LIMIT 1 OFFSET ${deep}`.execute(store.db)
      const row = anchor.rows[0]!
      const value = row.v instanceof Date ? row.v.toISOString() : key === 'id' ? Number(row.v) : String(row.v)
      const next = (await app.inject({ method: 'GET', url: first })).headers.link as string
      const signature = JSON.parse(Buffer.from(/cursor=([\w-]+)\./.exec(next)![1]!, 'base64url').toString()).s as string
      const values = key === 'id' ? [Number(row.id)] : [key === 'created_at' || key === 'updated_at' ? new Date(value as string).toISOString() : value, Number(row.id)]
      const deepCursor = `${first}&cursor=${cursors.encode('after', values, signature)}`
      const deepPage = `/posts?sort=${sort}&limit=${LIMIT}&page=${Math.floor(deep / LIMIT)}`
      const [c1, cN] = await timePair(first, deepCursor)
      const [o1, oN] = await timePair(`${first}&page=1`, deepPage)
      worst = Math.max(worst, cN / c1)
      rows.push(`| ${sort.padEnd(12)} | ${c1.toFixed(2).padStart(7)} | ${cN.toFixed(2).padStart(7)} | ${(cN / c1).toFixed(2).padStart(5)}× | ${o1.toFixed(2).padStart(7)} | ${oN.toFixed(2).padStart(8)} | ${(oN / o1).toFixed(0).padStart(5)}× |`)
    }
  }
  process.stdout.write(`\n${KIND}, ${ROWS.toLocaleString('en')} posts (${visible.toLocaleString('en')} visible), ${LIMIT} per page, median of ${RUNS} in-process requests, page 1 and the deep page timed alternately, ms; deep = item ${deep.toLocaleString('en')}\n\n`)
  process.stdout.write('| sort         | cursor p1 | cursor deep | ratio | offset p1 | offset deep | ratio |\n|---|---:|---:|---:|---:|---:|---:|\n')
  process.stdout.write(rows.join('\n') + '\n')
  process.stdout.write(`\nworst cursor ratio ${worst.toFixed(2)}× (target ≤ 1.5×): ${worst <= 1.5 ? 'met' : 'MISSED'}\n`)
  await app.close()
  await store.close()
  if (worst > 1.5) process.exitCode = 1
}

await main()
