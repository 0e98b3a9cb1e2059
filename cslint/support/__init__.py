"""Support: process, memory, interrupts, profiling, progress and budgets; nothing about linting."""
