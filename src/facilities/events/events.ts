/** What a subscription asks for: every event, or these. */
export const ALL_EVENTS = '*'

/** The wire form of an event (webhook body and stream `data`): `{id, type, occurred_at, data}`, `data` already JSON. */
export function eventJson (e: { readonly id: number, readonly type: string, readonly occurredAt: string, readonly data: string }): string {
  return `{"id":"${e.id}","type":${JSON.stringify(e.type)},"occurred_at":"${e.occurredAt}","data":${e.data}}`
}
