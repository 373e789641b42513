"""eval.deepresearch_bench"""
