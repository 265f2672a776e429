/* --json of the tools: json_out.h. */
#include "json_out.h"

#include "../common/vt_json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Allocations the helpers below could not make (the tools are one thread
 * where they print). */
static unsigned long helper_failures;

unsigned long vt_tool_json_begin(void) { return vt_json_alloc_failures() + helper_failures; }

int vt_tool_json_print(cJSON *doc, unsigned long begin)
{
    char *text = NULL;
    if (doc && vt_tool_json_begin() == begin && vt_json_make_text(doc) == 0)
        text = cJSON_Print(doc);
    cJSON_Delete(doc);
    if (!text)
        return -1;
    puts(text);
    fflush(stdout);
    cJSON_free(text);
    return 0;
}

void vt_tool_json_bytes(cJSON *obj, const char *key, const char *bytes, size_t n)
{
    if (vt_json_add_bytes(obj, key, bytes, n) != 0)
        helper_failures++;
}

void vt_tool_json_text(cJSON *obj, const char *key, const char *s)
{
    if (s)
        vt_tool_json_bytes(obj, key, s, strlen(s));
    else if (!cJSON_AddNullToObject(obj, key))
        helper_failures++;
}

void vt_tool_json_u64(cJSON *obj, const char *key, uint64_t v)
{
    if (v <= (1ull << 53)) {
        cJSON_AddNumberToObject(obj, key, (double)v);
    } else {
        char buf[24];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        cJSON_AddStringToObject(obj, key, buf);
    }
}
