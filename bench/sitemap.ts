/**
 * Sitemap benchmark (`npm run bench:sitemap`): seeds 10 000 and then 1 000 000 posts (set-based
 * SQL; nine in ten published), and in a fresh process for each reads GET /sitemap.xml over a
 * socket through the real app, then every part when it is an index, then /sitemap.xml again with
 * its ETag (the 304: what the validator costs). Prints time and peak RSS: memory must not grow
 * with the number of posts (the document is streamed from keyset pages).
 *
 *   npm run bench:sitemap                           # SQLite, 10 000 and 1 000 000 posts
 *   BENCH_STORE=postgres npm run bench:sitemap      # PostgreSQL at 127.0.0.1:5432 (scratch databases)
 *   BENCH_SIZES=1000,50000 npm run bench:sitemap    # other sizes
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import type { KyselyStore } from '../src/store/kysely-store.ts'
import { createContext, loadConfig, openStore } from '../src/context.ts'

const KIND = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'
const SIZES = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').map(Number)
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SELF = fileURLToPath(import.meta.url)

async function databaseUrl (rows: number): Promise<string> {
  if (KIND === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-sitemap-'))
    return `sqlite:${path.join(dir, 'blog.db')}`
  }
  const name = `blog_bench_sitemap_${rows}_${process.pid}`
  const admin = new pg.Client({ connectionString: PG_ADMIN })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_ADMIN)
  url.pathname = `/${name}`
  return url.toString()
}

async function dropDatabase (url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    fs.rmSync(path.dirname(url.slice('sqlite:'.length)), { recursive: true, force: true })
    return
  }
  const admin = new pg.Client({ connectionString: PG_ADMIN })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`)
  await admin.end()
}

/** Short posts with slugs, every tenth a draft (which the sitemap leaves out). */
async function seed (store: KyselyStore, rows: number): Promise<void> {
  if (store.kind === 'sqlite') {
    await sql`
      WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${rows})
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug)
      SELECT 'Post ' || i, 'Body ' || i, CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), 1, 'post-' || i
      FROM seq`.execute(store.db)
  } else {
    await sql`
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug)
      SELECT 'Post ' || i, 'Body ' || i, CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             to_timestamp(1577836800 + i), to_timestamp(1577836800 + i), 1, 'post-' || i
      FROM generate_series(1, ${rows}) AS i`.execute(store.db)
    await sql`ANALYZE posts`.execute(store.db)
  }
}

interface Result { posts: number, published: number, parts: number, rootS: number, rootBytes: number, partsS: number, partsBytes: number, notModifiedMs: number, rssReadyMb: number, peakRssMb: number, liveHeapMb: number }

async function get (url: string, headers: Record<string, string> = {}): Promise<{ status: number, bytes: number, etag: string, error: string }> {
  return await new Promise((resolve, reject) => {
    http.get(url, { headers }, res => {
      let n = 0
      let error = ''
      res.on('data', (c: Buffer) => {
        n += c.length
        if (res.statusCode! >= 400) error += c.toString()
      })
      res.on('end', () => { resolve({ status: res.statusCode!, bytes: n, etag: String(res.headers.etag), error }) })
      res.on('error', reject)
    }).on('error', reject)
  })
}

/** In the child: the real app on the seeded database, the sitemap read over a socket. */
async function runOnce (url: string, posts: number): Promise<Result> {
  // Shedding off: the sampler's forced collections below stall the event loop, which shedding
  // would answer with 503s that are the benchmark's own doing.
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    BOOTSTRAP_ADMIN_KEY: 'false',
    RATE_LIMIT_MAX: '0',
    BACKGROUND_WORK: 'false',
    OVERLOAD_MAX_WAIT_MS: '0',
  })
  const store = await openStore(config)
  const app = await buildApp(await createContext(config, { store, logger: false }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  global.gc?.()
  const rssReadyMb = process.memoryUsage().rss / 2 ** 20
  // Live heap: what survives a full collection, sampled while the sitemap is read. Peak RSS also
  // counts garbage V8 has not collected yet, which grows with the work done.
  let liveHeap = 0
  const sampler = setInterval(() => {
    global.gc?.()
    liveHeap = Math.max(liveHeap, process.memoryUsage().heapUsed)
  }, 250)

  let t0 = performance.now()
  const root = await get(`${base}/sitemap.xml`)
  const rootS = (performance.now() - t0) / 1000
  if (root.status !== 200) throw new Error(`/sitemap.xml answered ${root.status} ${root.error}`)
  const published = posts - Math.floor(posts / 10)
  const parts = published > config.editorial.sitemapUrlsPerFile ? Math.ceil(published / config.editorial.sitemapUrlsPerFile) : 0
  t0 = performance.now()
  let partsBytes = 0
  for (let n = 1; n <= parts; n++) {
    const part = await get(`${base}/sitemap-posts-${n}.xml`)
    if (part.status !== 200) throw new Error(`part ${n} answered ${part.status} ${part.error}`)
    partsBytes += part.bytes
  }
  const partsS = (performance.now() - t0) / 1000
  t0 = performance.now()
  const again = await get(`${base}/sitemap.xml`, { 'if-none-match': root.etag })
  const notModifiedMs = performance.now() - t0
  if (again.status !== 304) throw new Error(`/sitemap.xml with its ETag answered ${again.status}`)
  clearInterval(sampler)
  await app.close()
  await store.close()
  return { posts, published, parts, rootS, rootBytes: root.bytes, partsS, partsBytes, notModifiedMs, rssReadyMb, peakRssMb: process.resourceUsage().maxRSS / 1024, liveHeapMb: liveHeap / 2 ** 20 }
}

async function main (): Promise<void> {
  if (process.argv[2] === '--child') {
    const result = await runOnce(process.argv[3]!, Number(process.argv[4]))
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  console.log(`sitemap benchmark on ${KIND} (${os.cpus().length} cores, Node ${process.version})`)
  const results: Result[] = []
  for (const rows of SIZES) {
    const url = await databaseUrl(rows)
    try {
      const store = await openStore({ databaseUrl: url, pgPoolMax: 2, pgStatementTimeoutMs: 0 }) as KyselyStore
      await store.migrate()
      const t0 = performance.now()
      await seed(store, rows)
      await store.close()
      console.log(`seeded ${rows.toLocaleString('en')} posts in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
      // A process of its own per size, so that its peak RSS is its own.
      const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', SELF, '--child', url, String(rows)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
      results.push(JSON.parse(out.trim().split('\n').at(-1)!) as Result)
    } finally {
      await dropDatabase(url)
    }
  }
  console.log('\n| posts (published) | /sitemap.xml | parts | all parts | 304 | RSS when ready | peak RSS | peak live heap |\n|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const r of results) {
    const partsCell = r.parts === 0 ? '–' : `${r.partsS.toFixed(1)} s, ${(r.partsBytes / 2 ** 20).toFixed(1)} MiB`
    console.log(`| ${r.posts.toLocaleString('en')} (${r.published.toLocaleString('en')}) | ${r.rootS.toFixed(2)} s, ${(r.rootBytes / 2 ** 20).toFixed(2)} MiB | ${r.parts} | ${partsCell} | ${r.notModifiedMs.toFixed(0)} ms | ${r.rssReadyMb.toFixed(0)} MiB | ${r.peakRssMb.toFixed(0)} MiB | ${r.liveHeapMb.toFixed(0)} MiB |`)
  }
}

await main()
