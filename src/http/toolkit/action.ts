import type { Clock } from '../../clock.ts'
import type { FastifyRequest } from 'fastify'
import type { Move } from '../../domain/state-machine.ts'
import { AppError } from '../../errors.ts'
import type { OwnedRecord, OwnedRows } from '../../store/owned-rows.ts'
import type { WriteResult } from '../../store/store.ts'
import { preconditionOf } from './conditional.ts'

const RETRIES = 5

/**
 * The one way a row is changed: read it, check the client's precondition against what was read
 * (If-Match / If-Unmodified-Since: 412 PRECONDITION_FAILED, RFC 9110 §13.1.1), then write it as one
 * compare-and-set on the revision read, so of two racing writers one wins. A loser that named a
 * precondition has lost its update (412); one that did not is done again from the row as it now
 * is (a few times), so its write is judged on the state it really applies to.
 *
 * `read` throws the row's 404 (or 403); `write` reports `missing` (gone meanwhile: `notFound`) or
 * `stale` (changed meanwhile).
 */
export async function writeCurrent<T extends { revision: number }, R> (
  precondition: ((current: T) => boolean) | undefined,
  read: () => Promise<T>,
  write: (current: T) => Promise<WriteResult<R>>,
  notFound: () => AppError
): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const current = await read()
    if (precondition !== undefined && !precondition(current)) throw new AppError('PRECONDITION_FAILED')
    const result = await write(current)
    if (result.outcome === 'done') return result.value
    if (result.outcome === 'missing') throw notFound()
    if (precondition !== undefined || attempt >= RETRIES) throw new AppError('PRECONDITION_FAILED')
  }
}

/**
 * Applies a state machine's `move` to row `id` of `rows` (run it in the request's unit of work)
 * with writeCurrent: the request's precondition first, then the state (the move's `refused`
 * problem). A row the caller may not see is `notFound`; the move is stamped by `clock` (the composition root's).
 */
export async function act<T extends OwnedRecord> (req: FastifyRequest, kind: string, rows: OwnedRows<T, never>, id: number, move: Move<string>, notFound: () => AppError, clock: Clock): Promise<T> {
  return await writeCurrent(preconditionOf(req, kind), async () => {
    const current = await rows.find(id, req.principal)
    if (current === null) throw notFound()
    return current
  }, async current => {
    if (!move.from.includes(current.status)) {
      throw new AppError(move.refused, `It is ${current.status}; only ${move.from.join(' or ')} can become ${move.to}.`)
    }
    const r = await rows.move(id, req.principal, move.from, move.to, clock.now(), current.revision)
    return r.outcome === 'stale' ? { outcome: 'stale' } : r
  }, notFound)
}
