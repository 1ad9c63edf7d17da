/**
 * `npm run bench`'s bare Fastify server: the same routes, data and SQL as the reference server,
 * on Fastify with its defaults (no logger, no plugins, no schemas). Shows what the framework costs.
 *
 *   BENCH_DB=/tmp/x.db PORT=3912 node --import tsx bench/bare-fastify-server.ts
 */
import Fastify from 'fastify'
import { listJson, openPosts, postJson } from './reference-sql.ts'

const posts = openPosts(process.env.BENCH_DB ?? 'bench.db')
const app = Fastify({ logger: false })
const JSON_TYPE = 'application/json; charset=utf-8'

app.get('/healthz', async () => ({ status: 'ok' }))
app.get<{ Querystring: { after?: string } }>('/posts', async (req, reply) => {
  const after = req.query.after?.split(',')
  const page = posts.list(after === undefined ? null : [after[0]!, Number(after[1])])
  return reply.type(JSON_TYPE).send(listJson(page.items))
})
app.get<{ Params: { id: string } }>('/posts/:id', async (req, reply) => {
  const post = posts.get(Number(req.params.id))
  if (post === undefined) return reply.code(404).send({})
  return reply.type(JSON_TYPE).send(postJson(post))
})
app.post<{ Body: { title: string, content: string } }>('/posts', async (req, reply) => {
  return reply.code(201).type(JSON_TYPE).send(postJson(posts.create(req.body.title, req.body.content, 'bench')))
})
app.put<{ Params: { id: string }, Body: { title: string, content: string } }>('/posts/:id', async (req, reply) => {
  const post = posts.replace(Number(req.params.id), req.body.title, req.body.content)
  if (post === undefined) return reply.code(404).send({})
  return reply.type(JSON_TYPE).send(postJson(post))
})

await app.listen({ port: Number(process.env.PORT ?? 3912), host: '127.0.0.1' })
process.on('SIGTERM', () => { app.close().then(() => { posts.close(); process.exit(0) }, () => { process.exit(1) }) })
