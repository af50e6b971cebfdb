{{ config(tags=['cdc_self_check']) }}

{#-
    The change-mask macros against the vectors of formats/qlik_change_tables.md: returns the
    vectors the macros get wrong (none when they are right).
    A self-check (tag cdc_self_check): it fails only on a defect of this project or a damaged
    lake, so a data-only `cdc run` leaves it out (ADR 0015).
-#}

with

bit_vectors as (
    select
        '008080' as mask_hex,
        7 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '008080' as mask_hex,
        15 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '008080' as mask_hex,
        8 as bit_index,
        'lsb_last_hex' as bit_order,
        false as is_set
    union all
    select
        '008080' as mask_hex,
        23 as bit_index,
        'lsb_last_hex' as bit_order,
        false as is_set
    union all
    select
        '008080' as mask_hex,
        15 as bit_index,
        'lsb_first_byte' as bit_order,
        true as is_set
    union all
    select
        '008080' as mask_hex,
        23 as bit_index,
        'lsb_first_byte' as bit_order,
        true as is_set
    union all
    select
        '008080' as mask_hex,
        7 as bit_index,
        'lsb_first_byte' as bit_order,
        false as is_set
    union all
    select
        '0B' as mask_hex,
        0 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '0B' as mask_hex,
        2 as bit_index,
        'lsb_last_hex' as bit_order,
        false as is_set
    union all
    select
        '0B' as mask_hex,
        3 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '3A70' as mask_hex,
        9 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '3A70' as mask_hex,
        10 as bit_index,
        'lsb_last_hex' as bit_order,
        false as is_set
    union all
    select
        '3A70' as mask_hex,
        13 as bit_index,
        'lsb_last_hex' as bit_order,
        true as is_set
    union all
    select
        '' as mask_hex,
        0 as bit_index,
        'lsb_last_hex' as bit_order,
        false as is_set
),

bit_results as (
    select
        concat('bit ', mask_hex, ' ', bit_index, ' ', bit_order) as vector,
        {{ cdc_mask_bit('mask_hex', 'bit_index', 'bit_order') }} = is_set as is_right
    from bit_vectors
),

column_vectors as (
    select
        '0200' as mask_hex,
        array(
            'header__change_seq', 'header__change_oper', 'header__change_mask', 'header__stream_position',
            'header__operation', 'header__transaction_id', 'header__timestamp', 'ID', 'NAME', 'CITY'
        ) as column_names,
        7 as first_bit,
        array('CITY') as expected_columns
    union all
    select
        '008080' as mask_hex,
        array(
            'item_no', 'mfg_div_cd', 'phys_loc_cd', 'plnr_cd', 'inv_class_cd', 'use_um_cd', 'byr_cd', 'item_desc',
            'itm_aut_ord_fct', 'itm_ord_mod_cd', 'itm_whs_ctl_cd', 'itm_aut_ord_cd', 'gnr_pt_no_ind', 'div_adr_no',
            'ems_rel_cd', 'load_date_time'
        ) as column_names,
        0 as first_bit,
        array('item_desc', 'load_date_time') as expected_columns
),

column_results as (
    select
        concat('columns ', mask_hex) as vector,
        {{ cdc_changed_columns('mask_hex', 'column_names', 'first_bit') }} = expected_columns as is_right
    from column_vectors
),

all_results as (
    select * from bit_results
    union all
    select * from column_results
)

select * from all_results
where not coalesce(is_right, false)
