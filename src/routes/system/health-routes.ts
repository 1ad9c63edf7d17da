import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { unavailable } from '../../http/protocol/problems.ts'
import type { Store } from '../../store/store.ts'
import { problemResponses, SYSTEM_ERRORS } from '../../http/contract/schemas.ts'

const HealthSchema = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false })
const READY_TIMEOUT_MS = 2000

/** Liveness (the process answers) and readiness (the store answers too, else 503). */
export async function healthRoutes (app: FastifyInstance, opts: { store: Store }): Promise<void> {
  app.get('/healthz', {
    config: { ignoresCredentials: true },
    schema: { tags: ['operations'], summary: 'Liveness', response: { 200: HealthSchema, ...problemResponses(...SYSTEM_ERRORS) } },
  }, async (_req, reply) => {
    reply.header('cache-control', 'no-store')
    return { status: 'ok' as const }
  })

  app.get('/readyz', {
    config: { ignoresCredentials: true },
    schema: { tags: ['operations'], summary: 'Readiness: the store is reachable', response: { 200: HealthSchema, ...problemResponses(...SYSTEM_ERRORS) } },
  }, async (_req, reply) => {
    // An open circuit is known at once: no need to wait for a ping that cannot answer.
    if (opts.store.circuit.state !== 'closed') throw unavailable('SERVICE_UNAVAILABLE', `The store is not answering (its circuit is ${opts.store.circuit.state}).`)
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        opts.store.ping(),
        new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error('store ping timed out')), READY_TIMEOUT_MS) }),
      ])
    } catch (err) {
      app.log.warn({ err }, 'readiness check failed')
      throw unavailable('SERVICE_UNAVAILABLE', 'The store is not reachable.')
    } finally {
      clearTimeout(timer)
    }
    reply.header('cache-control', 'no-store')
    return { status: 'ok' as const }
  })
}
