import type { Resource } from './http/resources.ts'
import { exportsResource } from './routes/exports/index.ts'
import { ordersResource } from './resources/orders/index.ts'
import { eventsResource } from './resources/events/index.ts'
import { webhooksResource } from './resources/webhooks/index.ts'
import { postsResource } from './routes/posts/index.ts'

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
  webhooksResource,
  eventsResource,
]

/** The scopes a credential can carry (contract §5): each resource's, and `admin`, which alone permits everything. */
export const KNOWN_SCOPES: readonly string[] = [...RESOURCES.flatMap(r => r.scopes ?? []), 'admin']
