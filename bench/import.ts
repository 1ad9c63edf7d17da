/**
 * Import benchmark (`npm run bench:import`): a generated WordPress export of 10 000 posts (about
 * 50 MB) imported by a real service process (the built `dist/`), timed from POST /imports to the
 * job's end. Meanwhile one client reads a post every 10 ms: its p99 during the import is
 * compared with its p99 before it, and the service's RSS is sampled from /proc. Printed against
 * the targets: at most 60 s, at most 100 MB of RSS growth, a read's p99 at most 3× its idle p99.
 *
 *   npm run bench:import                          # SQLite, 10 000 posts
 *   BENCH_STORE=postgres npm run bench:import     # PostgreSQL at 127.0.0.1:5432 (a scratch database)
 *   BENCH_POSTS=2000 npm run bench:import         # another size
 *   BENCH_CPU_PROF=/tmp/prof npm run bench:import # the service's CPU profile, written as it stops
 */
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { SignJWT } from 'jose'

const KIND = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'
const POSTS = Number(process.env.BENCH_POSTS ?? 10_000)
/** BENCH_CPU_PROF=dir: the service writes a CPU profile (`--cpu-prof`) there when it stops. */
const PROFILE = process.env.BENCH_CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SECRET = 'bench-secret-that-is-at-least-32-bytes-long!'
const IDLE_READS = 400
const READ_EVERY_MS = 10

const PARAGRAPH = '<p>Lorem ipsum dolor sit amet, <strong>consectetur</strong> adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud <a href="https://example.com/x">exercitation</a> ullamco laboris nisi ut aliquip ex ea commodo consequat.</p>\n'

/** A WXR 1.2 file of `n` posts of about 5 KB each (paragraphs, a list, a table), two categories and three tags each. */
function writeWxr (file: string, n: number): void {
  const fd = fs.openSync(file, 'w')
  fs.writeSync(fd, `<?xml version="1.0" encoding="UTF-8" ?>
<rss version="2.0" xmlns:excerpt="http://wordpress.org/export/1.2/excerpt/" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:wp="http://wordpress.org/export/1.2/">
<channel><title>Bench</title><link>https://old.example</link><wp:wxr_version>1.2</wp:wxr_version>
`)
  const body = PARAGRAPH.repeat(12) + '<ul><li>one</li><li>two</li><li>three</li></ul>\n<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>\n'
  for (let i = 1; i <= n; i++) {
    const date = new Date(Date.UTC(2015, 0, 1) + i * 3_600_000).toISOString().slice(0, 19).replace('T', ' ')
    fs.writeSync(fd, `<item><title>Post number ${i}</title><link>https://old.example/${i}/post-number-${i}/</link><dc:creator><![CDATA[author${i % 7}]]></dc:creator>
<guid isPermaLink="false">https://old.example/?p=${i}</guid><content:encoded><![CDATA[${body}]]></content:encoded><excerpt:encoded><![CDATA[]]></excerpt:encoded>
<wp:post_id>${i}</wp:post_id><wp:post_date_gmt><![CDATA[${date}]]></wp:post_date_gmt><wp:post_name><![CDATA[post-number-${i}]]></wp:post_name><wp:status><![CDATA[${i % 10 === 0 ? 'draft' : 'publish'}]]></wp:status><wp:post_type><![CDATA[post]]></wp:post_type>
<category domain="category" nicename="c${i % 30}"><![CDATA[Category ${i % 30}]]></category><category domain="category" nicename="general"><![CDATA[General]]></category>
<category domain="post_tag" nicename="t${i % 100}"><![CDATA[Tag ${i % 100}]]></category><category domain="post_tag" nicename="u${i % 13}"><![CDATA[Topic ${i % 13}]]></category><category domain="post_tag" nicename="v${i % 3}"><![CDATA[Kind ${i % 3}]]></category>
<wp:postmeta><wp:meta_key><![CDATA[_wp_old_slug]]></wp:meta_key><wp:meta_value><![CDATA[old-post-${i}]]></wp:meta_value></wp:postmeta></item>
`)
  }
  fs.writeSync(fd, '</channel></rss>\n')
  fs.closeSync(fd)
}

async function freePort (): Promise<number> {
  const server = net.createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

function rssBytes (pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

function p99 (samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!
}

async function main (): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'blog.js'))) throw new Error('run `npm run build` first (npm run bench:import does)')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-import-'))
  const file = path.join(dir, 'export.xml')
  writeWxr(file, POSTS)
  const size = fs.statSync(file).size
  let url = `sqlite:${path.join(dir, 'blog.db')}`
  let dbName: string | null = null
  if (KIND === 'postgres') {
    dbName = `blog_bench_import_${process.pid}`
    const admin = new pg.Client({ connectionString: PG_ADMIN })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${dbName}`)
    await admin.end()
    const u = new URL(PG_ADMIN)
    u.pathname = `/${dbName}`
    url = u.toString()
  }
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, ['--max-semi-space-size=8', '--heap-growing-percent=50', ...PROFILE, path.join(ROOT, 'dist', 'blog.js'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(await freePort()), AUTH_JWT_SECRET: SECRET, BOOTSTRAP_ADMIN_KEY: 'false', ...(process.env.IMPORT_BATCH_SIZE === undefined ? {} : { IMPORT_BATCH_SIZE: process.env.IMPORT_BATCH_SIZE }), LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '0', OVERLOAD_MAX_WAIT_MS: '0' },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  try {
    for (let i = 0; ; i++) {
      try { if ((await fetch(`${base}/readyz`)).ok) break } catch {}
      if (i > 300) throw new Error('the service did not start')
      await sleep(100)
    }
    const token = await new SignJWT({ scope: 'admin' }).setProtectedHeader({ alg: 'HS256' }).setSubject('bench').setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
    const authorization = `Bearer ${token}`
    const created = await fetch(`${base}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'Read me', content: 'The post read during the import.' }) })
    const readUrl = `${base}/posts/${((await created.json()) as { id: number }).id}`
    const read = async () => {
      const t0 = performance.now()
      const res = await fetch(readUrl)
      await res.arrayBuffer()
      return performance.now() - t0
    }
    for (let i = 0; i < 100; i++) await read()
    const idle: number[] = []
    for (let i = 0; i < IDLE_READS; i++) {
      idle.push(await read())
      await sleep(READ_EVERY_MS)
    }
    const rssBefore = rssBytes(child.pid!)

    const body = fs.readFileSync(file)
    const t0 = performance.now()
    const res = await fetch(`${base}/imports`, { method: 'POST', headers: { authorization, 'content-type': 'application/xml' }, body })
    if (res.status !== 202) throw new Error(`POST /imports answered ${res.status}: ${await res.text()}`)
    const location = res.headers.get('location')!
    const uploaded = performance.now() - t0
    let peak = rssBefore
    let job: any
    const during: number[] = []
    const reading = { on: true }
    // One reader at a steady pace, as a visitor's requests come, not a flood competing for the cores.
    const reader = (async () => {
      while (reading.on) {
        during.push(await read())
        await sleep(READ_EVERY_MS)
      }
    })()
    for (;;) {
      peak = Math.max(peak, rssBytes(child.pid!))
      job = await (await fetch(`${base}${location}`, { headers: { authorization } })).json()
      if (job.status === 'succeeded' || job.status === 'failed') break
      await sleep(100)
    }
    const seconds = (performance.now() - t0) / 1000
    reading.on = false
    await reader
    peak = Math.max(peak, rssBytes(child.pid!))
    if (job.status !== 'succeeded') throw new Error(`the import failed: ${job.failure}`)
    const growth = (peak - rssBefore) / 1024 / 1024
    const idleP99 = p99(idle)
    const busyP99 = p99(during)
    const row = (what: string, value: string, target: string, met: boolean) => console.log(`${what.padEnd(34)} ${value.padStart(14)}   target ${target.padEnd(12)} ${met ? 'met' : 'NOT met'}`)
    console.log(`\nimport of ${POSTS} posts, ${(size / 1024 / 1024).toFixed(1)} MB of WXR, ${KIND}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'})`)
    console.log(`report: ${JSON.stringify(job.report.posts)}, tags ${job.report.tags}, redirects ${job.report.redirects}, warnings ${job.report.warnings.length}`)
    console.log(`upload (POST until 202): ${(uploaded / 1000).toFixed(1)} s`)
    row('time, POST to succeeded', `${seconds.toFixed(1)} s`, '≤ 60 s', seconds <= 60)
    row('posts per second', (POSTS / seconds).toFixed(0), `≥ ${Math.ceil(POSTS / 60)}`, POSTS / seconds >= POSTS / 60)
    row('peak RSS growth', `${growth.toFixed(1)} MB`, '≤ 100 MB', growth <= 100)
    row('read p99 idle / during import', `${idleP99.toFixed(2)} / ${busyP99.toFixed(2)} ms`, '≤ 3×', busyP99 <= 3 * idleP99)
    console.log(`reads during the import: ${during.length} (p50 ${[...during].sort((a, b) => a - b)[Math.floor(during.length / 2)]?.toFixed(2)} ms), ratio ${(busyP99 / idleP99).toFixed(1)}×`)
  } finally {
    child.kill('SIGTERM')
    await new Promise(resolve => child.once('exit', resolve))
    fs.rmSync(dir, { recursive: true, force: true })
    if (dbName !== null) {
      const admin = new pg.Client({ connectionString: PG_ADMIN })
      await admin.connect()
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
      await admin.end()
    }
  }
}

await main()
