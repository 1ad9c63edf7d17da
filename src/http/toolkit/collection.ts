import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ListPage, ListQuery, SortTerm } from '../../store/store.ts'
import type { Audience } from '../pipeline/caching.ts'
import { type CollectionSpec, type CursorCodec, type ListRequest, parseListRequest, pagingQueryProperties, type PagingQuery, sendPage, storeQueryOf } from './paging.ts'
import { linkBase } from '../protocol/versioning.ts'

/** What a collection's list route needs beyond the shared paging rules. */
export interface ListSpec<T, K extends string, F> {
  readonly collection: CollectionSpec<K>
  /** Every field name an item may hold in this version (what `fields` may name). */
  readonly fieldNames: readonly string[]
  /** An item's fields when `fields` is not given. */
  readonly defaultFields: (lr: ListRequest<K>) => readonly string[]
  /** An item's members by field name. */
  readonly data: (item: T) => Record<string, unknown>
  /** Whether each item carries `_links.self`. */
  readonly selfLink: boolean
  readonly audience: Audience
  /** An item's value for a sort term, as its cursor carries it, when it is not simply the item's field of that name. */
  readonly sortValue?: (item: T, term: SortTerm) => string | number
  /** What decides an item's bytes (the list's ETag); by default its id, revision and `updatedAt`. */
  readonly version?: (item: T) => string
  /** Reads the page; `lr` tells what was asked for (`include`, `fields`). */
  readonly read: (req: FastifyRequest, query: ListQuery<K, F>, lr: ListRequest<K>) => Promise<ListPage<T>>
}

/** The query split into the collection's own filters and the shared paging parameters. */
function splitQuery<F> (query: object): { filter: F, paging: PagingQuery } {
  const filter: Record<string, unknown> = {}
  const paging: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(query)) {
    if (k in pagingQueryProperties) paging[k] = v
    else if (v !== undefined) filter[k] = v
  }
  return { filter: filter as F, paging }
}

/**
 * The handler of any collection's GET: filters and paging parsed and checked, the page read,
 * each item holding exactly its default fields or `fields` (plus `_links.self`), sent by sendPage.
 */
export function listHandler<T extends { id: number | string }, K extends string, F> (cursors: CursorCodec, spec: ListSpec<T, K, F>) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const { filter, paging } = splitQuery<F>(req.query as object)
    const lr = parseListRequest(req, paging, spec.collection, filter as Record<string, unknown>, spec.fieldNames, cursors)
    const page = await spec.read(req, storeQueryOf(lr, filter), lr)
    const names = lr.fields ?? spec.defaultFields(lr)
    const base = `${linkBase(req)}/${spec.collection.name}/`
    return sendPage(req, reply, lr, page, cursors, {
      render: item => {
        const data = spec.data(item)
        const out: Record<string, unknown> = {}
        for (const name of names) out[name] = data[name]
        if (spec.selfLink) out._links = { self: { href: base + String(item.id) } }
        return out
      },
      audience: spec.audience,
      sortValue: spec.sortValue,
      version: spec.version,
    })
  }
}
