import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { ListPage, ListQuery, SortTerm } from './store.ts'

function flip (d: 'asc' | 'desc'): 'asc' | 'desc' {
  return d === 'asc' ? 'desc' : 'asc'
}

/**
 * Keyset condition "strictly after `values` in `sort` order". When every term runs the same
 * way it is one row-value comparison, which both databases answer with an index range scan.
 */
function keysetCondition<DB, TB extends keyof DB> (
  eb: ExpressionBuilder<DB, TB>,
  sort: readonly SortTerm[],
  values: readonly unknown[],
  column: (key: string) => string
): Expression<SqlBool> {
  const sameWay = sort.every(t => t.direction === sort[0]!.direction)
  if (sameWay) {
    const op = sort[0]!.direction === 'asc' ? '>' : '<'
    const cols = sql.join(sort.map(t => sql.ref(column(t.key))))
    const vals = sql.join(values.map(v => sql.val(v)))
    return sql<SqlBool>`(${cols}) ${sql.raw(op)} (${vals})`
  }
  const ors: Expression<SqlBool>[] = sort.map((term, i) => {
    const ands = sort.slice(0, i).map((t, j) => sql<SqlBool>`${sql.ref(column(t.key))} = ${values[j]}`)
    ands.push(sql<SqlBool>`${sql.ref(column(term.key))} ${sql.raw(term.direction === 'asc' ? '>' : '<')} ${values[i]}`)
    return eb.and(ands)
  })
  return eb.or(ors)
}

/**
 * Reads one page of any list: offset or keyset paging over `sort`, which must end with a unique key.
 * Shared by every collection so that paging behaves the same everywhere.
 */
export async function readPage<DB, TB extends keyof DB & string, O> (
  base: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery<string, unknown>,
  column: (key: string) => string,
  countQuery: () => Promise<number>
): Promise<ListPage<O>> {
  const backwards = query.before !== undefined
  const order = backwards ? query.sort.map(t => ({ key: t.key, direction: flip(t.direction) })) : query.sort
  const position = query.after ?? query.before
  let q = base
  if (position !== undefined) {
    q = q.where(eb => keysetCondition(eb as ExpressionBuilder<DB, TB>, order, position, column))
  }
  for (const term of order) q = q.orderBy(sql.ref(column(term.key)), term.direction)
  q = q.limit(query.limit + 1)
  if (query.offset) q = q.offset(query.offset)
  const [rows, total] = await Promise.all([q.execute(), query.count ? countQuery() : Promise.resolve(undefined)])
  const more = rows.length > query.limit
  const items = more ? rows.slice(0, query.limit) : rows
  if (backwards) items.reverse()
  return total === undefined ? { items, more } : { items, more, total }
}
