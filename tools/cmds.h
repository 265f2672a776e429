/* Subcommands of the vt executable. Each parses its own arguments and calls
 * libvt; it returns the process exit code (0 ok, 1 check failed, 2 bad input). */
#ifndef VT_TOOLS_CMDS_H
#define VT_TOOLS_CMDS_H

int vt_cmd_gguf(int argc, char **argv);
int vt_cmd_codec(int argc, char **argv);
int vt_cmd_fixture(int argc, char **argv);
int vt_cmd_run(int argc, char **argv);
int vt_cmd_agree(int argc, char **argv);
int vt_cmd_kld(int argc, char **argv);
int vt_cmd_op(int argc, char **argv);
int vt_cmd_seal(int argc, char **argv);
int vt_cmd_provenance(int argc, char **argv);
int vt_cmd_capture(int argc, char **argv);
int vt_cmd_neartie(int argc, char **argv);
int vt_cmd_export(int argc, char **argv);
int vt_cmd_bench(int argc, char **argv);

#endif
