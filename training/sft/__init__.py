"""training.sft"""
