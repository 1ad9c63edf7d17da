/** What a subscription asks for: every event, or these. */
export const ALL_EVENTS = '*'

/** An event kept from before actors were recorded: said to be the service's. */
const UNKNOWN_ACTOR = '{"kind":"system","id":null,"name":"system"}'

/**
 * The wire form of an event (webhook body and stream `data`): `{id, type, occurred_at, actor, data}`,
 * `data` and `actor` already JSON.
 */
export function eventJson (e: { readonly id: number, readonly type: string, readonly occurredAt: string, readonly data: string, readonly actor: string | null }): string {
  return `{"id":"${e.id}","type":${JSON.stringify(e.type)},"occurred_at":"${e.occurredAt}","actor":${e.actor ?? UNKNOWN_ACTOR},"data":${e.data}}`
}
