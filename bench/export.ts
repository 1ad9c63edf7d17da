/**
 * Export benchmark (`npm run bench:export`): seeds 10 000 and then 100 000 posts (set-based SQL),
 * and in a fresh process for each runs one export through the real app (POST /exports, polling)
 * and downloads the file over a socket. Prints time and peak RSS: memory must not grow with the
 * number of posts (the worker holds one page and one chunk; the download streams stored chunks).
 *
 *   npm run bench:export                          # SQLite, 10 000 and 100 000 posts
 *   BENCH_STORE=postgres npm run bench:export     # PostgreSQL at 127.0.0.1:5432 (scratch databases)
 *   BENCH_SIZES=1000,50000 npm run bench:export   # other sizes
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { generateApiKey } from '../src/http/pipeline/auth.ts'
import type { KyselyStore } from '../src/store/kysely-store.ts'
import { createContext, loadConfig, openStore } from '../src/context.ts'

const KIND = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'
const SIZES = (process.env.BENCH_SIZES ?? '10000,100000').split(',').map(Number)
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SELF = fileURLToPath(import.meta.url)

async function databaseUrl (rows: number): Promise<string> {
  if (KIND === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-export-'))
    return `sqlite:${path.join(dir, 'blog.db')}`
  }
  const name = `blog_bench_export_${rows}_${process.pid}`
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

/** Posts of about 400 bytes each, every tenth a draft, by 100 authors. */
async function seed (store: KyselyStore, rows: number): Promise<void> {
  const body = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(6)
  if (store.kind === 'sqlite') {
    await sql`
      WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${rows})
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      SELECT 'Post ' || i, ${body} || i, CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), 1
      FROM seq`.execute(store.db)
  } else {
    await sql`
      INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
      SELECT 'Post ' || i, ${body} || i, CASE WHEN i % 10 = 0 THEN 'draft' ELSE 'published' END, 'user' || (i % 100),
             to_timestamp(1577836800 + i), to_timestamp(1577836800 + i), 1
      FROM generate_series(1, ${rows}) AS i`.execute(store.db)
  }
}

interface Result { posts: number, bytes: number, exportS: number, downloadS: number, rssReadyMb: number, peakRssMb: number, liveHeapMb: number }

/** In the child: the real app on the seeded database, one export, its download over a socket. */
async function runOnce (url: string, posts: number): Promise<Result> {
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', BOOTSTRAP_ADMIN_KEY: 'false', EXPORT_POLL_MS: '50', RATE_LIMIT_MAX: '0' })
  const store = await openStore(config)
  const key = generateApiKey()
  await store.apiKeys.create({ id: key.id, name: 'bench', scopes: ['admin'], hash: key.hash }, new Date())
  const app = await buildApp(await createContext(config, { store, logger: false }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const headers = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' }
  global.gc?.()
  const rssReadyMb = process.memoryUsage().rss / 2 ** 20
  // Live heap: what survives a full collection, sampled while the export and the download run.
  // Peak RSS also counts garbage V8 has not collected yet, which grows with the work done.
  let liveHeap = 0
  const sampler = setInterval(() => {
    global.gc?.()
    liveHeap = Math.max(liveHeap, process.memoryUsage().heapUsed)
  }, 250)

  const started = performance.now()
  const created = await fetch(`${base}/exports`, { method: 'POST', headers, body: JSON.stringify({ format: 'ndjson' }) })
  const location = created.headers.get('location')!
  let job: { status: string, size: number, exported: number }
  for (;;) {
    job = await (await fetch(`${base}${location}`, { headers })).json() as typeof job
    if (job.status === 'succeeded' || job.status === 'failed') break
    await sleep(100)
  }
  const exportS = (performance.now() - started) / 1000
  if (job.status !== 'succeeded' || job.exported !== posts) throw new Error(`export ${job.status} with ${job.exported} posts`)

  const t0 = performance.now()
  const bytes = await new Promise<number>((resolve, reject) => {
    http.get(`${base}${location}/file`, { headers }, res => {
      let n = 0
      res.on('data', (c: Buffer) => { n += c.length })
      res.on('end', () => { resolve(n) })
      res.on('error', reject)
    }).on('error', reject)
  })
  const downloadS = (performance.now() - t0) / 1000
  clearInterval(sampler)
  if (bytes !== job.size) throw new Error(`downloaded ${bytes} of ${job.size} bytes`)
  await app.close()
  await store.close()
  return { posts, bytes, exportS, downloadS, rssReadyMb, peakRssMb: process.resourceUsage().maxRSS / 1024, liveHeapMb: liveHeap / 2 ** 20 }
}

async function main (): Promise<void> {
  if (process.argv[2] === '--child') {
    const result = await runOnce(process.argv[3]!, Number(process.argv[4]))
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  console.log(`export benchmark on ${KIND} (${os.cpus().length} cores, Node ${process.version})`)
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
  console.log('\n| posts | file | export | download | RSS when ready | peak RSS | peak live heap |\n|---:|---:|---:|---:|---:|---:|---:|')
  for (const r of results) {
    console.log(`| ${r.posts.toLocaleString('en')} | ${(r.bytes / 2 ** 20).toFixed(1)} MiB | ${r.exportS.toFixed(1)} s | ${r.downloadS.toFixed(1)} s | ${r.rssReadyMb.toFixed(0)} MiB | ${r.peakRssMb.toFixed(0)} MiB | ${r.liveHeapMb.toFixed(0)} MiB |`)
  }
  if (results.length >= 2) {
    const [small, large] = [results[0]!, results.at(-1)!]
    console.log(`\n${(large.posts / small.posts).toFixed(0)}× the posts: peak RSS ${large.peakRssMb.toFixed(0)} vs ${small.peakRssMb.toFixed(0)} MiB (${(large.peakRssMb / small.peakRssMb).toFixed(2)}×), peak live heap ${large.liveHeapMb.toFixed(0)} vs ${small.liveHeapMb.toFixed(0)} MiB`)
  }
}

await main()
