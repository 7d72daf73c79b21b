/* SPDX-License-Identifier: MIT */
/* Two functions compiled into a relocatable object for test_gdbjit. */
extern void jit_callee(void);
int jit_leaf(int n);
void jit_caller(void);

int jit_leaf(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += i * 3;
	return s;
}

void jit_caller(void)
{
	jit_callee();
	jit_callee();
}
