import type { Part, Resource } from './http/resources.ts'
import { eventsFacility, eventsResource, webhooksResource } from './facilities/events/index.ts'
import { postsResource } from './resources/posts/index.ts'
import { ordersResource } from './resources/orders/index.ts'
import { exportsResource } from './resources/exports/index.ts'
import { importsResource } from './resources/imports/index.ts'
import { mediaResource } from './resources/media/index.ts'

/** Every facility (a part without routes of its own): adding one is its folder plus one line here. */
export const FACILITIES: readonly Part[] = [eventsFacility]

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
  webhooksResource,
  eventsResource,
  importsResource,
  mediaResource,
]

/** Every part, in the order their declarations are put together: the facilities, then the resources. */
export const PARTS: readonly Part[] = [...FACILITIES, ...RESOURCES]
