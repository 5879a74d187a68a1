/*
 * cppcheck.h -- macros cppcheck cannot see (it does not read system
 * headers); included by `make lint` only.
 */
#define json_object_foreach(object, key, value) \
	for ((key) = "", (value) = (object); (key) != 0; (key) = 0)
#define json_array_foreach(array, index, value) \
	for ((index) = 0, (value) = (array); (index) < 1; (index)++)
