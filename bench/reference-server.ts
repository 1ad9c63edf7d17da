/**
 * The ceiling of `npm run bench`: bare node:http and better-sqlite3, the same data and SQL as
 * the service, no framework and none of the API's work. Not a server to use.
 *
 *   BENCH_DB=/tmp/x.db PORT=3911 node --import tsx bench/reference-server.ts
 */
import http from 'node:http'
import { listJson, openPosts, postJson } from './reference-sql.ts'

const posts = openPosts(process.env.BENCH_DB ?? 'bench.db')
const JSON_TYPE = 'application/json; charset=utf-8'

function send (res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

function readBody (req: http.IncomingMessage): Promise<{ title: string, content: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { title: string, content: string })
      } catch (err) {
        reject(err)
      }
    })
    req.on('error', reject)
  })
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  const id = /^\/posts\/(\d+)$/.exec(url.pathname)?.[1]
  if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, '{"status":"ok"}')
  if (req.method === 'GET' && url.pathname === '/posts') {
    const after = url.searchParams.get('after')?.split(',')
    const page = posts.list(after === undefined ? null : [after[0]!, Number(after[1])])
    return send(res, 200, listJson(page.items))
  }
  if (req.method === 'GET' && id !== undefined) {
    const post = posts.get(Number(id))
    return post === undefined ? send(res, 404, '{}') : send(res, 200, postJson(post))
  }
  if (req.method === 'POST' && url.pathname === '/posts') {
    readBody(req).then(b => { send(res, 201, postJson(posts.create(b.title, b.content, 'bench'))) }, () => { send(res, 400, '{}') })
    return
  }
  if (req.method === 'PUT' && id !== undefined) {
    readBody(req).then(b => {
      const post = posts.replace(Number(id), b.title, b.content)
      if (post === undefined) send(res, 404, '{}')
      else send(res, 200, postJson(post))
    }, () => { send(res, 400, '{}') })
    return
  }
  send(res, 404, '{}')
})
server.keepAliveTimeout = 65_000
server.listen(Number(process.env.PORT ?? 3911), '127.0.0.1')
process.on('SIGTERM', () => { server.close(); posts.close(); process.exit(0) })
