/**
 * Instructions per request under callgrind: a measure of a request's CPU work that does not move
 * with whatever else runs on the machine (a throughput run on a shared machine measures the
 * neighbours). The server runs under `valgrind --tool=callgrind` with instrumentation off; a
 * warm-up of sequential requests on one kept-alive connection lets V8 compile the hot code, then
 * instrumentation is switched on for the measured requests only, and the total instruction count
 * (every thread of the process, user space) is divided by their number.
 *
 *   npm run build && tsx bench/instructions.ts                       # the service, read one
 *   BENCH_SERVER=floor tsx bench/instructions.ts                     # the floor (or ceiling, fastify)
 *   BENCH_SCENARIO=list BENCH_WARMUP=2000 BENCH_REQUESTS=1000 tsx bench/instructions.ts
 *   BENCH_SCENARIO=create BENCH_WARMUP=1000 BENCH_REQUESTS=500 tsx bench/instructions.ts   # one write at a time
 *   BENCH_DIST=../before/dist/blog.js tsx bench/instructions.ts   # another build, on the same seed
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/x tsx bench/instructions.ts   # the service on PostgreSQL (seeded by the caller)
 *
 * Identical runs differ by a few per cent (JIT and GC timing): compare builds alternating, and
 * trust only differences well above that.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { FILLER, POSTS, ROOT, SERVICE_ENV, writerToken } from './seed.ts'

const SERVER = process.env.BENCH_SERVER ?? 'service'
const SCENARIO = process.env.BENCH_SCENARIO ?? 'read'
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3000)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000)
const DIST = process.env.BENCH_DIST ?? path.join(ROOT, 'dist/blog.js')
/** A writer's token (create), signed with the secret the service is started with. */
const TOKEN = await writerToken()

function seed (file: string): void {
  execFileSync(process.execPath, [DIST, 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${file}` } })
  const db = new Database(file)
  db.prepare(`
    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
    INSERT INTO posts (title, content, status, author, created_at, updated_at, revision)
    SELECT 'Post ' || i || ' ' || lower(hex(randomblob(4))), 'Post number ' || i || '. ' || ?, 'published', 'bench',
           strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch'), 1
    FROM seq`).run(POSTS, FILLER)
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** One kept-alive connection sending bare requests as wrk does (Host only), one at a time. */
class Client {
  private buf = Buffer.alloc(0)
  private waiting: ((status: number) => void) | undefined
  private constructor (private readonly socket: net.Socket) {
    socket.on('data', chunk => {
      this.buf = Buffer.concat([this.buf, chunk])
      this.parse()
    })
  }

  static async connect (port: number): Promise<Client> {
    const socket = net.connect(port, '127.0.0.1')
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    return new Client(socket)
  }

  private parse (): void {
    const end = this.buf.indexOf('\r\n\r\n')
    if (end < 0 || this.waiting === undefined) return
    const head = this.buf.subarray(0, end).toString('latin1')
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
    if (/\r\ntransfer-encoding: *chunked/i.test(head)) throw new Error('chunked answers are not read by this client')
    if (this.buf.length < end + 4 + length) return
    this.buf = this.buf.subarray(end + 4 + length)
    const done = this.waiting
    this.waiting = undefined
    done(Number(head.slice(9, 12)))
  }

  async request (text: string): Promise<number> {
    return await new Promise(resolve => {
      this.waiting = resolve
      this.socket.write(text)
    })
  }

  close (): void { this.socket.destroy() }
}

function requestText (i: number): string {
  const id = (i * 7919) % POSTS + 1
  switch (SCENARIO) {
    case 'read': return `GET /posts/${id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
    case 'list': return `GET ${SERVER === 'service' ? '/posts?limit=20' : '/posts'} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
    case 'conditional': return `GET /posts/${id} HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: "x"\r\n\r\n`
    case 'create': {
      // As wrk's create does: a distinct title, ~2 KB of content, a writer's token.
      const body = JSON.stringify({ title: `Bench post ${i} ${Math.random().toString(36).slice(2, 8)}`, content: FILLER })
      return `POST /posts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    }
    default: throw new Error(`unknown BENCH_SCENARIO ${SCENARIO}`)
  }
}

async function main (): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-instr-'))
  const out = path.join(dir, 'callgrind.out')
  let child: ChildProcess | undefined
  try {
    const file = path.join(dir, 'posts.db')
    const pgUrl = process.env.DATABASE_URL?.startsWith('postgres') === true ? process.env.DATABASE_URL : undefined
    if (pgUrl === undefined || SERVER !== 'service') seed(file)
    const port = 20000 + Math.floor(Math.random() * 20000)
    const node = SERVER === 'service'
      ? ['--max-semi-space-size=8', '--heap-growing-percent=50', DIST, 'serve']
      : ['--import', 'tsx', path.join(ROOT, `bench/${SERVER === 'ceiling' ? 'reference-server' : 'bare-fastify-server'}.ts`)]
    const env = {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: pgUrl ?? `sqlite:${file}`,
      DATA_DIR: dir,
      BENCH_DB: file,
      ...SERVICE_ENV,
      // Valgrind runs the process ~50 times slower, and slower still on a busy machine: a GC pause
      // would read as overload (the admission queue and the in-flight bound still run on every
      // request, with bounds the slow process does not reach), and the
      // background workers' polls, which come by the clock, would be counted with the requests.
      OVERLOAD_MAX_WAIT_MS: '60000',
      EXPORT_POLL_MS: '60000',
      ...(SERVER === 'floor' ? { BENCH_FLOOR: '1' } : {}),
    }
    const log = fs.openSync(path.join(dir, 'server.log'), 'w')
    child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath, ...node],
      { cwd: ROOT, env, stdio: ['ignore', log, 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', d => { stderr += String(d) })
    let client: Client | undefined
    for (let i = 0; i < 1200 && client === undefined; i++) {
      try { client = await Client.connect(port) } catch { await sleep(250) }
      if (child.exitCode !== null) throw new Error(`the server exited:\n${stderr}`)
    }
    if (client === undefined) throw new Error('the server did not start')
    let bad = 0
    for (let i = 0; i < WARMUP; i++) if ((await client.request(requestText(i))) >= 400) bad++
    execFileSync('callgrind_control', ['-i', 'on', String(child.pid)], { stdio: 'ignore' })
    for (let i = 0; i < REQUESTS; i++) if ((await client.request(requestText(WARMUP + i))) >= 400) bad++
    execFileSync('callgrind_control', ['-i', 'off', String(child.pid)], { stdio: 'ignore' })
    client.close()
    child.kill('SIGTERM')
    await new Promise(resolve => child!.once('exit', resolve))
    const text = fs.readFileSync(out, 'utf8')
    const total = Number(/^totals: (\d+)/m.exec(text)?.[1])
    process.stdout.write(`${SERVER} ${SCENARIO}: ${(total / REQUESTS / 1000).toFixed(0)} k instructions per request (${REQUESTS} after ${WARMUP} warm-up; ${bad} answers ≥ 400)\n`)
  } finally {
    if (child !== undefined && child.exitCode === null) child.kill('SIGKILL')
    if (process.env.BENCH_KEEP === undefined) fs.rmSync(dir, { recursive: true, force: true })
    else process.stderr.write(`kept ${dir}\n`)
  }
}

await main()
