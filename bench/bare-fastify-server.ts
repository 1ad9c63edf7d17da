/**
 * `npm run bench`'s bare Fastify server: the same routes, data and SQL as the reference server,
 * on Fastify with its defaults (no logger, no plugins, no schemas). Shows what the framework costs.
 *
 * With BENCH_FLOOR=1 it is the floor: the same server carrying only what the API puts on
 * every answer whatever the request, without any of the work behind it: the response headers a
 * read of this service sends (request id, traceparent, the security set, API-Version, RateLimit,
 * and on reads ETag, Last-Modified, Cache-Control, Vary), each made per request where the service
 * makes it per request, and one log line per request at info with the service's fields, through
 * a child logger carrying the request id, as the service logs. No negotiation, validation, rate
 * limiting, shedding, conditional requests, metrics or tracing context: what any implementation on
 * Fastify pays before it does the API's work, so the ceiling no such implementation can pass.
 *
 * The floor also serves the files of BENCH_FILES (a folder) at /bench-files/{name}, as a static
 * file server does (stat, then the file streamed from disk, with its type, length, a validator from
 * size and time, Last-Modified and an immutable Cache-Control): what the service's /media/{id}/file
 * and cached /image are held against, the same bytes.
 *
 *   BENCH_DB=/tmp/x.db PORT=3912 node --import tsx bench/bare-fastify-server.ts
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import Fastify, { type FastifyReply, LogController } from 'fastify'
import { PUBLIC_CACHE } from '../src/http/pipeline/caching.ts'
import { limitHeader, policyHeader } from '../src/http/pipeline/rate-limit.ts'
import { API_CSP } from '../src/http/pipeline/security.ts'
import { randomHex } from '../src/http/pipeline/tracing.ts'
import { listJson, openPosts, type PostRow, postJson } from './reference-sql.ts'

const posts = openPosts(process.env.BENCH_DB ?? 'bench.db')
const floor = process.env.BENCH_FLOOR === '1'
const app = Fastify(floor
  ? { logger: { level: 'info' }, genReqId: () => randomUUID(), logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }) }
  : { logger: false })
const JSON_TYPE = 'application/json; charset=utf-8'

if (floor) {
  // The headers every answer of the service carries, with the values it sends by default (the
  // bench's RATE_LIMIT_MAX, a window of 60 s); the values are the service's own where it has them.
  const policy = policyHeader(1_000_000_000, 60)
  const limit = limitHeader(999_999_999, 60)
  app.addHook('onRequest', (req, reply, done) => {
    reply.headers({
      'x-request-id': req.id,
      traceparent: `00-${randomHex(16)}-${randomHex(8)}-01`,
      'content-security-policy': API_CSP,
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-origin',
      'api-version': '1',
      'ratelimit-policy': policy,
      ratelimit: limit,
    })
    done()
  })
  app.addHook('onResponse', (req, reply, done) => {
    req.log.info({ method: req.method, path: req.url, route: req.routeOptions.url, status: reply.statusCode, duration_ms: reply.elapsedTime, trace_id: randomHex(16) }, 'request')
    done()
  })
}

/** A read's caching headers, as the service sends them for a published post and a public list. */
function cacheable (reply: FastifyReply, post: PostRow | undefined): FastifyReply {
  if (!floor) return reply
  if (post !== undefined) reply.header('etag', `"${post.id}-${post.revision}"`).header('last-modified', new Date(post.updated_at).toUTCString())
  return reply.header('cache-control', PUBLIC_CACHE).header('vary', 'Accept, accept-encoding, Authorization')
}

app.get('/healthz', async () => ({ status: 'ok' }))
app.get<{ Querystring: { after?: string } }>('/posts', async (req, reply) => {
  const after = req.query.after?.split(',')
  const page = posts.list(after === undefined ? null : [after[0]!, Number(after[1])])
  return cacheable(reply, undefined).type(JSON_TYPE).send(listJson(page.items))
})
app.get<{ Params: { id: string } }>('/posts/:id', async (req, reply) => {
  const post = posts.get(Number(req.params.id))
  if (post === undefined) return reply.code(404).send({})
  return cacheable(reply, post).type(JSON_TYPE).send(postJson(post))
})
app.post<{ Body: { title: string, content: string } }>('/posts', async (req, reply) => {
  return reply.code(201).type(JSON_TYPE).send(postJson(posts.create(req.body.title, req.body.content, 'bench')))
})
app.put<{ Params: { id: string }, Body: { title: string, content: string } }>('/posts/:id', async (req, reply) => {
  const post = posts.replace(Number(req.params.id), req.body.title, req.body.content)
  if (post === undefined) return reply.code(404).send({})
  return reply.type(JSON_TYPE).send(postJson(post))
})

if (floor && process.env.BENCH_FILES !== undefined) {
  const dir = process.env.BENCH_FILES
  const types: Record<string, string> = { '.jpg': 'image/jpeg', '.webp': 'image/webp', '.png': 'image/png', '.avif': 'image/avif' }
  app.get<{ Params: { name: string } }>('/bench-files/:name', async (req, reply) => {
    const file = path.join(dir, path.basename(req.params.name))
    const stat = await fs.promises.stat(file).catch(() => null)
    if (stat === null) return reply.code(404).send({})
    return reply.headers({
      'content-type': types[path.extname(file)] ?? 'application/octet-stream',
      'content-length': stat.size,
      etag: `W/"${stat.size.toString(16)}-${stat.mtimeMs.toString(16)}"`,
      'last-modified': stat.mtime.toUTCString(),
      'cache-control': 'public, max-age=31536000, immutable',
      'accept-ranges': 'bytes',
    }).send(fs.createReadStream(file))
  })
}

await app.listen({ port: Number(process.env.PORT ?? 3912), host: '127.0.0.1' })
process.on('SIGTERM', () => { app.close().then(() => { posts.close(); process.exit(0) }, () => { process.exit(1) }) })
