/**
 * The bare ceiling of `npm run bench`: what any server pays at the least to store and read a post.
 * Bare node:http and better-sqlite3 on a plain table (id, title, content, created_at), WAL with
 * `synchronous=NORMAL` (BENCH_SYNC=FULL: every commit synced to the disk before it is answered, the
 * service's durability), one prepared statement per request, the row sent as it is stored. None of
 * the service's data (no slug, tags, HTML, excerpt), indexes, checks or headers: its figures are
 * the ones users hold a blog service against. Not a server to use.
 *
 *   BENCH_DB=/tmp/bare.db PORT=3915 node --import tsx bench/bare-server.ts
 *
 * Seed with `seedBare` (the same ~2 KB posts as the service's copy, a second apart).
 */
import http from 'node:http'
import Database from 'better-sqlite3'

interface Row { id: number, title: string, content: string, created_at: string }

/** The plain table with `count` posts of `content` ('Post number i. ' before it, as the service's seed). */
export function seedBare (file: string, count: number, filler: string): void {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL)')
  db.prepare(`
    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
    INSERT INTO posts (title, content, created_at)
    SELECT 'Post ' || i || ' ' || lower(hex(randomblob(4))), 'Post number ' || i || '. ' || ?,
           strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch') FROM seq`).run(count, filler)
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

function serve (file: string, port: number): void {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma(`synchronous = ${process.env.BENCH_SYNC === 'FULL' ? 'FULL' : 'NORMAL'}`)
  const byId = db.prepare<[number], Row>('SELECT * FROM posts WHERE id = ?')
  // Newest first by id (ids follow created_at here): the primary key, no index of its own.
  const first = db.prepare<[], Pick<Row, 'id' | 'title' | 'created_at'>>('SELECT id, title, created_at FROM posts ORDER BY id DESC LIMIT 20')
  const after = db.prepare<[number], Pick<Row, 'id' | 'title' | 'created_at'>>('SELECT id, title, created_at FROM posts WHERE id < ? ORDER BY id DESC LIMIT 20')
  const insert = db.prepare<[string, string, string], Row>('INSERT INTO posts (title, content, created_at) VALUES (?, ?, ?) RETURNING *')
  const update = db.prepare<[string, string, number], Row>('UPDATE posts SET title = ?, content = ? WHERE id = ? RETURNING *')
  const JSON_TYPE = 'application/json; charset=utf-8'

  const send = (res: http.ServerResponse, status: number, body: string): void => {
    res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }
  const withBody = (req: http.IncomingMessage, res: http.ServerResponse, then: (b: { title: string, content: string }) => void): void => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let b: { title: string, content: string }
      try {
        b = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { title: string, content: string }
      } catch {
        return send(res, 400, '{}')
      }
      then(b)
    })
  }
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const pathname = q === -1 ? url : url.slice(0, q)
    const id = /^\/posts\/(\d+)$/.exec(pathname)?.[1]
    if (req.method === 'GET' && pathname === '/healthz') return send(res, 200, '{"status":"ok"}')
    if (req.method === 'GET' && pathname === '/posts') {
      // `after=<created_at>,<id>` as the bench gives the other references: the id decides here.
      const position = /[?&]after=[^&]*?(\d+)(?:&|$)/.exec(url)?.[1]
      return send(res, 200, JSON.stringify({ items: position === undefined ? first.all() : after.all(Number(position)) }))
    }
    if (req.method === 'GET' && id !== undefined) {
      const row = byId.get(Number(id))
      return row === undefined ? send(res, 404, '{}') : send(res, 200, JSON.stringify(row))
    }
    if (req.method === 'POST' && pathname === '/posts') {
      return withBody(req, res, b => { send(res, 201, JSON.stringify(insert.get(b.title, b.content, new Date().toISOString()))) })
    }
    if (req.method === 'PUT' && id !== undefined) {
      return withBody(req, res, b => {
        const row = update.get(b.title, b.content, Number(id))
        if (row === undefined) send(res, 404, '{}')
        else send(res, 200, JSON.stringify(row))
      })
    }
    send(res, 404, '{}')
  })
  server.keepAliveTimeout = 65_000
  server.listen(port, '127.0.0.1')
  process.on('SIGTERM', () => { server.close(); db.close(); process.exit(0) })
}

if (import.meta.url === `file://${process.argv[1]}`) serve(process.env.BENCH_DB ?? 'bare.db', Number(process.env.PORT ?? 3915))
