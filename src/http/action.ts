import type { FastifyRequest } from 'fastify'
import type { Move } from '../domain/state-machine.ts'
import { AppError } from '../errors.ts'
import type { OwnedRecord, OwnedRows } from '../store/owned-rows.ts'
import { hasPrecondition, preconditionHolds, validatorsOf } from './conditional.ts'

/**
 * Applies a state machine's `move` to row `id` of `rows` (run it in the request's unit of work):
 * the request's If-Match / If-Unmodified-Since first (412 PRECONDITION_FAILED, RFC 9110 §13.1.1),
 * then the state (the move's `refused` problem), as one compare-and-set, so of two racing moves
 * one wins. A row the caller may not see is `notFound`.
 */
export async function act<T extends OwnedRecord> (req: FastifyRequest, kind: string, rows: OwnedRows<T, never>, id: number, move: Move<string>, notFound: () => AppError): Promise<T> {
  let expected: number | undefined
  if (hasPrecondition(req)) {
    const current = await rows.find(id, req.principal)
    if (current === null) throw notFound()
    if (!preconditionHolds(req, validatorsOf(req, kind, current))) throw new AppError('PRECONDITION_FAILED')
    expected = current.revision
  }
  const r = await rows.move(id, req.principal, move.from, move.to, new Date(), expected)
  if (r.outcome === 'done') return r.value
  const current = r.outcome === 'missing' ? null : await rows.find(id, req.principal)
  if (current === null) throw notFound()
  // Changed since the client's precondition was checked: its copy is stale.
  if (expected !== undefined && current.revision !== expected) throw new AppError('PRECONDITION_FAILED')
  throw new AppError(move.refused, `${kind.replace(/s$/, '').replace(/^./, c => c.toUpperCase())} ${id} is ${current.status}, not ${move.from.join(' or ')}: it cannot become ${move.to}.`)
}
