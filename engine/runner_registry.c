/* The runner registry: a new reference engine is one more row. */
#include "runner.h"

#include <string.h>

extern const vt_runner_ops vt_runner_engine;   /* engine/runner_engine.c */
extern const vt_runner_ops vt_runner_llamacpp; /* oracle/llamacpp_runner.c */
extern const vt_runner_ops vt_runner_transformers; /* oracle/transformers_runner.c */
extern const vt_runner_ops vt_runner_plugin;   /* engine/runner_plugin.c */
extern const vt_runner_ops vt_runner_openai;   /* oracle/openai_runner.c */

static const vt_runner_ops *const runners[] = { &vt_runner_engine, &vt_runner_llamacpp, &vt_runner_transformers,
                                                 &vt_runner_openai };

#define PLUGIN_PREFIX "plugin:"

const char *vt_runner_plugin_path(const char *name)
{
    return name && strncmp(name, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) == 0 ? name + strlen(PLUGIN_PREFIX) : NULL;
}

const vt_runner_ops *vt_runner_find(const char *name)
{
    if (vt_runner_plugin_path(name))
        return &vt_runner_plugin;
    for (size_t i = 0; i < sizeof runners / sizeof runners[0]; i++)
        if (strcmp(runners[i]->name, name) == 0)
            return runners[i];
    return NULL;
}
