import type { Facility, Part, Resource } from './http/contract/resources.ts'
import { eventsFacility } from './facilities/events/index.ts'
import { identityFacility } from './facilities/identity/index.ts'
import { postsResource } from './resources/posts/index.ts'
import { ordersResource } from './resources/orders/index.ts'
import { exportsResource } from './resources/exports/index.ts'
import { importsResource } from './resources/imports/index.ts'
import { mediaResource } from './resources/media/index.ts'
import { siteSettingsResource } from './resources/site-settings/index.ts'

/** Every facility (a part the core and the other parts use; it may carry routes): adding one is its folder plus one line here. */
export const FACILITIES: readonly Facility[] = [eventsFacility, identityFacility]

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
  importsResource,
  mediaResource,
  siteSettingsResource,
]

/**
 * Every part, in the order their declarations are put together: the facilities, then the
 * resources (and after them, the resources the facilities carry: the composition root adds them).
 */
export const PARTS: readonly Part[] = [...FACILITIES, ...RESOURCES]
