import { actorOf } from '../../domain/principal.ts'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Store, StoredResponse, TransactionOptions, UnitOfWork } from '../../store/store.ts'
import { PRIVATE_CACHE } from '../pipeline/caching.ts'
import { type Revisioned, validatorsOf } from './conditional.ts'
import { completeIdempotentWrite } from '../pipeline/idempotency.ts'
import { preferences } from './prefer.ts'
import { linkBase } from '../protocol/versioning.ts'

/** What a write made: the status it earns, the representation, and its validators and location. */
export interface Written {
  /** 201 created, 200 changed, 202 accepted for later. */
  readonly status: 200 | 201 | 202
  readonly body: unknown
  readonly etag?: string
  readonly lastModified?: Date
  readonly location?: string
}

/**
 * What writing resource `r` of `kind` (its collection's name, `tickets`) earns: its representation `body`, its
 * validators, and for a 201 its Location under the request's version prefix.
 */
export function writtenResource (req: FastifyRequest, kind: string, r: Revisioned, body: unknown, status: 200 | 201): Written {
  const location = status === 201 ? { location: `${linkBase(req)}/${kind}/${r.id}` } : {}
  return { status, body, ...validatorsOf(req, kind, r), ...location }
}

/**
 * The answer to a write, in one place for every resource: Location, ETag,
 * Last-Modified, `private, no-store`; with `Prefer: return=minimal` no body (a 200 becomes 204),
 * and `Preference-Applied` says which `return` preference was honoured. The body is serialised
 * here, with the route's response schema, so the bytes can be stored for an Idempotency-Key replay.
 */
export function writeResponse (req: FastifyRequest, reply: FastifyReply, w: Written): StoredResponse {
  const headers: Record<string, string> = { 'cache-control': PRIVATE_CACHE }
  if (w.location !== undefined) headers.location = w.location
  if (w.etag !== undefined) headers.etag = w.etag
  if (w.lastModified !== undefined) headers['last-modified'] = w.lastModified.toUTCString()
  const want = preferences(req).get('return')
  if (want === 'minimal') {
    headers['preference-applied'] = 'return=minimal'
    return { status: w.status === 200 ? 204 : w.status, headers, body: '' }
  }
  if (want === 'representation') headers['preference-applied'] = 'return=representation'
  headers['content-type'] = req.responseMediaType
  return { status: w.status, headers, body: String(reply.code(w.status).serialize(w.body)) }
}

/** Sends a response made by writeResponse (or stored by it, for a replay). */
export function sendStored (reply: FastifyReply, r: StoredResponse): FastifyReply {
  reply.code(r.status).headers(r.headers)
  return r.body === '' ? reply.send() : reply.send(r.body)
}

/**
 * Runs a request's writes as one unit of work of `store` and answers them: everything `work` writes, and the
 * Idempotency-Key record with the response, commit together or not at all; nothing commits once
 * the request was abandoned; `uow.onCommit` side effects run only after the commit.
 *
 * @example
 * return await answerWrite(ctx.store, req, reply, async uow => {
 *   const ticket = await uow.tickets.insert(principal.subject, 'OPEN', { subject }, [], new Date())
 *   return writtenResource(req, 'tickets', ticket, render(ticket), 201)
 * })
 */
export async function answerWrite (store: Store, req: FastifyRequest, reply: FastifyReply, work: (uow: UnitOfWork) => Promise<Written>): Promise<FastifyReply> {
  const response = await store.transaction(async uow => {
    const r = writeResponse(req, reply, await work(uow))
    await completeIdempotentWrite(req, uow, r)
    return r
  }, unitOptions(req))
  return sendStored(reply, response)
}

/**
 * Runs a request's deletion as one unit of work and answers it: 204 with no body, `private,
 * no-store`; abandoned, committed and logged like every other write (unitOptions). `settled`,
 * when given, is work after the commit that the answer waits for (what the deletion must have
 * finished before the client hears it is done).
 */
export async function answerDelete (store: Store, req: FastifyRequest, reply: FastifyReply, work: (uow: UnitOfWork) => Promise<void>, settled?: () => Promise<void>): Promise<FastifyReply> {
  await store.transaction(work, unitOptions(req))
  await settled?.()
  return reply.code(204).header('cache-control', PRIVATE_CACHE).send()
}

/**
 * A request's unit of work: rolled back when the request is abandoned (timed out, client gone),
 * and past the request's deadline once it is being committed; failed after-commit work is logged.
 */
function unitOptions (req: FastifyRequest): TransactionOptions {
  return {
    actor: actorOf(req.principal),
    signal: req.abandoned,
    onCommitting: () => { req.commitStarted() },
    onCallbackError: err => { req.log.error({ err }, 'work after commit failed') },
  }
}
