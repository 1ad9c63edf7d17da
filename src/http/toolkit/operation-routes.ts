import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../../domain/principal.ts'
import type { AppError } from '../../errors.ts'
import type { JobWaker } from '../../jobs/job.ts'
import { isFinished, type OperationRecord } from '../../store/leased-rows.ts'
import type { Store, UnitOfWork } from '../../store/store.ts'
import { linkBase } from '../protocol/versioning.ts'
import { sendRepresentation } from './conditional.ts'
import { answerWrite } from './write.ts'

/** Seconds a client should wait before polling an unfinished operation again. */
export const POLL_AFTER_S = '1'

/** How a resource's operations are found and shown, in the version of the routes that declare them. */
export interface OperationRoutes<J extends OperationRecord> {
  /** The collection's name: its path (`/<kind>/{id}`) and its representations' digest. */
  readonly kind: string
  /** The job that runs them (src/jobs/operation.ts): woken once one is accepted. */
  readonly job: string
  readonly store: Store
  readonly jobs: JobWaker
  /** The operation, if it exists and `owner` asked for it. */
  find (id: number, owner: string): Promise<J | null>
  /** The 404 of an operation that does not exist, or is someone else's. */
  notFound (id: number): AppError
  render (job: J, base: string): unknown
  /** Its strong ETag: it must change with every step its runner records. */
  etag (job: J, base: string, digest: string): string
}

/**
 * Operation `id` of `principal`: someone else's does not exist for the caller, not even for an
 * admin (their 404, never a 403, so ids tell nothing).
 */
export async function findOwn<J extends OperationRecord> (d: Pick<OperationRoutes<J>, 'find' | 'notFound'>, id: number, principal: Principal): Promise<J> {
  const job = await d.find(id, principal.subject)
  if (job === null) throw d.notFound(id)
  return job
}

/**
 * The two answers every long operation gives. `accept`: the operation `create` records in the
 * request's unit of work, answered 202 with its representation, `Location` and `ETag` (and an
 * Idempotency-Key's replay, as every write), its job woken once committed. `poll`: the caller's
 * operation with its ETag (304 on a matching If-None-Match), `Retry-After` while it runs, 404 when
 * it is another's.
 *
 * @example
 * const ops = operationRoutes({ kind: 'countdowns', job: 'countdowns', store, jobs, find, notFound, render, etag })
 * app.post('/countdowns', …, async (req, reply) => await ops.accept(req, reply, async uow => await uow.countdowns.create(owner, n, now)))
 * app.get('/countdowns/:countdown_id', …, async (req, reply) => await ops.poll(req, reply, req.params.countdown_id))
 */
export function operationRoutes<J extends OperationRecord> (d: OperationRoutes<J>) {
  const etag = (req: FastifyRequest, job: J, base: string) => d.etag(job, base, req.server.representations.digest(d.kind))
  return {
    async accept (req: FastifyRequest, reply: FastifyReply, create: (uow: UnitOfWork) => Promise<J>): Promise<FastifyReply> {
      const base = linkBase(req)
      return await answerWrite(d.store, req, reply, async uow => {
        const job = await create(uow)
        uow.onCommit(() => { d.jobs.wake(d.job) })
        return { status: 202, body: d.render(job, base), location: `${base}/${d.kind}/${job.id}`, etag: etag(req, job, base) }
      })
    },

    async poll (req: FastifyRequest, reply: FastifyReply, id: number): Promise<FastifyReply> {
      const job = await findOwn(d, id, req.principal as Principal)
      if (!isFinished(job.status)) reply.header('retry-after', POLL_AFTER_S)
      const base = linkBase(req)
      return sendRepresentation(req, reply, d.render(job, base), { etag: etag(req, job, base), audience: 'private' })
    },

    /** The caller's operation (for a route of its own, a download), or its 404. */
    async findOwn (req: FastifyRequest, id: number): Promise<J> {
      return await findOwn(d, id, req.principal as Principal)
    },
  }
}
